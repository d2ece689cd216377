"""The driver half of Triton's backend pair: active when TCEMU_TRITON is set (sm90 or sm100) or when
TRITON_DEFAULT_BACKEND=tcemu; making it builds tcemu's driver (tcemu.frontends.triton_driver.Driver)."""
import os

from triton.backends.driver import DriverBase


class TcemuDriver(DriverBase):

    @staticmethod
    def is_active():
        return os.environ.get("TCEMU_TRITON", "") not in ("", "0") or \
            os.environ.get("TRITON_DEFAULT_BACKEND") == "tcemu"

    def __new__(cls):
        from tcemu.frontends.triton_driver import make_driver  # tcemu only when the driver is made
        return make_driver()

    # DriverBase's abstract methods: never called (__new__ returns tcemu's driver)
    def map_python_to_cpp_type(self, ty):
        raise NotImplementedError

    def get_current_target(self):
        raise NotImplementedError

    def get_active_torch_device(self):
        raise NotImplementedError

    def get_benchmarker(self):
        raise NotImplementedError
