"""The tensor core's arithmetic: element types, number formats, the fused dot-product unit and the accumulator chains of tcemu.matmul."""
