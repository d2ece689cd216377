// Launch-record builder interface (tcemu, scripts/cutlass/). Host code only; no GPU, no CUDA driver.
//
// A builder program instantiates a kernel exactly as its PTX fixture does (the same .cu, the same -D), gives
// CUTLASS/CuTe's own host code fake device pointers from tcemu_rec::buffer(), lets that host code build its
// arguments and "launch", and prints what the launch would have passed (fake_cuda.cpp stands in for the CUDA
// runtime and driver): kernel entry, grid, block, cluster, dynamic shared bytes, the parameter blob laid out
// by the entry's PTX .param list, where buffer pointers and tensor maps sit in it, and the arguments of every
// cuTensorMapEncodeTiled call. scripts/cutlass_kernels.py runs the builders and stores the records.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace tcemu_rec {

// A fake device buffer: returns a distinct, recognisable address (0x00f0'00?0'0000'0000, 64 GiB apart). `storage`
// is the row-major storage shape, `dtype` one of the generator's names (bf16, f16, f32, e4m3) or "bytes".
void* buffer(const std::string& name, const std::string& role, const std::string& dtype,
             const std::vector<long long>& storage, std::size_t bytes);

// Documentation values carried into the record (problem shape, alpha, beta, layouts...).
void note(const std::string& key, const std::string& json_value);
void note(const std::string& key, long long value);
void note(const std::string& key, double value);

// Parse the command line: --ptx FILE (the fixture PTX: the .param list of the launched entry is read from it).
// Returns the remaining arguments.
std::vector<std::string> init(int argc, char** argv);

// Struct padding in the parameter blob holds whatever memory held: a builder calls fill_stack() right before
// the host code that builds the kernel's arguments, and gives objects that keep them (GemmUniversalAdapter)
// storage filled with fill_byte(). scripts/cutlass_kernels.py runs every builder with two fill bytes
// (TCEMU_STACK_FILL) and zeroes the blob bytes that differ: exactly the bytes no host code wrote.
int fill_byte();
void fill_stack();

// Print the record as JSON on stdout; returns the process exit code (nonzero if the launch was not recorded
// exactly once or a fake-zone value in the blob is not a buffer pointer).
int finish();

}  // namespace tcemu_rec
