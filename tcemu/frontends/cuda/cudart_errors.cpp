// The error names and texts of tcemu's libcudart.so (cudaGetErrorName / cudaGetErrorString), as CUDA 13's
// libcudart words them.
#include "cudart.h"

namespace tcemu_rt {

const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidChannelDescriptor, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor"},
    {cudaErrorInvalidFilterSetting, "cudaErrorInvalidFilterSetting", "invalid filter setting"},
    {cudaErrorInvalidNormSetting, "cudaErrorInvalidNormSetting", "invalid norm setting"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorCooperativeLaunchTooLarge, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
     "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure",
     "the graph update was not performed because it included changes which violated constraints specific to "
     "instantiated graph update"},
    {cudaErrorLossyQuery, "cudaErrorLossyQuery", "loss of data in query"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* error_text(int code) {
  for (const auto& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace tcemu_rt
