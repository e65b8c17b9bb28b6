// The single header every generated weft module includes.
#pragma once
#include "core.h"
#include "loop_stack.h"
#include "scalar.h"
#include "array.h"
#include "fabric.h"
#include "tuple.h"
#include "vec_types.h"
#include "vec.h"
#include "mat.h"
#include "quat.h"
#include "transform.h"
#include "spatial.h"
#include "classify.h"
#include "accumulate.h"
#include "staging.h"
#include "linalg.h"
#include "struct.h"
#include "tangent.h"
#include "address.h"
#include "random.h"
#include "noise.h"
#include "geometry/mesh.h"
#include "geometry/hashgrid.h"
#include "geometry/volume.h"
#include "intersect.h"
#include "tile/tile_ops.h"
#include "tile/tile_linalg.h"
#include "tile/tile_data.h"
#include "tile/tile_geometry.h"
#include "tile/tile_cuda.h"

namespace weft {

#ifndef WEFT_CUDA
template <typename... A>
inline void printf_flush(const char* fmt, A... args) {
    printf(fmt, args...);
    fflush(stdout);
}
#else
// Device printf output is flushed by the driver at synchronization points.
template <typename... A>
__device__ inline void printf_flush(const char* fmt, A... args) {
    printf(fmt, args...);
}
#endif

}  // namespace weft
