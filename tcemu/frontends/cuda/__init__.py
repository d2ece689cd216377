"""`tcemu exec`: an unmodified CUDA program on the CPU through tcemu's own libcudart.so (cudart.cpp, built by
build.py), whose launches run on tcemu's PTX interpreter (runtime.py) with the kernels' PTX from the fatbinary
(fatbin.py)."""
