"""The compiler half of Triton's backend pair: tcemu compiles with Triton's own NVIDIA backend, so this one
claims no target (Triton's make_backend picks the NVIDIA backend for GPUTarget("cuda", 90 or 100, 32))."""
from triton.backends.compiler import BaseBackend


class TcemuCompiler(BaseBackend):

    @staticmethod
    def supports_target(target):
        return False

    def hash(self):
        return "tcemu"

    def parse_options(self, options):
        raise NotImplementedError("tcemu compiles with Triton's NVIDIA backend")

    def add_stages(self, stages, options, language):
        raise NotImplementedError("tcemu compiles with Triton's NVIDIA backend")

    def load_dialects(self, context):
        pass

    def get_module_map(self):
        return {}
