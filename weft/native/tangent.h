// Forward mode (codegen/tangent_emit.py): tangent_dot(g, d), the product of one float component
// of an adjoint g and the same component of a tangent d, in float64. Summed over the components
// of a call's operands it turns a row of the call's Jacobian (its adjoint seeded with a unit
// vector) into one component of the call's tangent.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::.
#pragma once

#include "scalar.h"

namespace weft {

template <typename T>
WEFT_FN float64 tangent_dot(const T& g, const T& d) {
    if constexpr (scalar_traits<T>::is_float)
        return float64(compute_t<T>(g)) * float64(compute_t<T>(d));
    else
        return 0.0;  // integers carry no tangent
}

}  // namespace weft
