// Forward mode (codegen/tangent_emit.py): tangent_dot(g, d), the inner product of an adjoint g
// and a tangent d of the same type, summed in float64. It turns a row of a builtin's Jacobian
// (its adjoint seeded with a unit vector) into one component of the call's tangent.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::.
#pragma once

#include "scalar.h"
#include "vec_types.h"

namespace weft {

template <typename T>
WEFT_FN float64 tangent_dot(const T& g, const T& d) {
    if constexpr (scalar_traits<T>::is_float)
        return float64(compute_t<T>(g)) * float64(compute_t<T>(d));
    else
        return 0.0;  // integers carry no tangent
}
template <unsigned N, typename T>
WEFT_FN float64 tangent_dot(const vec_t<N, T>& g, const vec_t<N, T>& d) {
    float64 s = 0.0;
    for (unsigned i = 0; i < N; ++i) s += tangent_dot(g.c[i], d.c[i]);
    return s;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN float64 tangent_dot(const mat_t<R, C, T>& g, const mat_t<R, C, T>& d) {
    float64 s = 0.0;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) s += tangent_dot(g.data[i][j], d.data[i][j]);
    return s;
}
template <typename T>
WEFT_FN float64 tangent_dot(const quat_t<T>& g, const quat_t<T>& d) {
    float64 s = 0.0;
    for (int i = 0; i < 4; ++i) s += tangent_dot(g[i], d[i]);
    return s;
}
template <typename T>
WEFT_FN float64 tangent_dot(const transform_t<T>& g, const transform_t<T>& d) {
    return tangent_dot(g.p, d.p) + tangent_dot(g.q, d.q);
}

}  // namespace weft
