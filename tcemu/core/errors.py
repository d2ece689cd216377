"""tcemu's error types: every one is a ValueError that names the field and the rule."""


class TcemuError(ValueError):
    """Bad input to tcemu. `field` names what was wrong, `rule` says what was expected."""

    def __init__(self, field: str, rule: str):
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


class DescriptorError(TcemuError):
    """A matrix or instruction descriptor breaks an encoding or validity rule."""


class LayoutError(TcemuError):
    """An operand shape, major-ness or dtype that the instruction or layout does not allow."""


class SharedMemoryError(TcemuError):
    """An access outside the shared-memory window, or misaligned for its element size."""


class TraceError(TcemuError):
    """A trace file that is malformed, of an unknown format, or inconsistent."""


class TmemError(TcemuError):
    """A tensor-memory address, layout or read that tcgen05 does not allow."""


class LimitError(TcemuError):
    """An input that would need more memory or time than one of tcemu's named limits: the message gives the
    estimate (or the count) and the limit, checked before anything is allocated."""
