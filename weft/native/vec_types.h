// Composite value types shared by vec.h, mat.h, quat.h, transform.h and spatial.h.
// Layouts match the Python side (types: vector/matrix/quat/transform) and NumPy views:
//   vec_t<N,T>       N contiguous components
//   mat_t<R,C,T>     R*C components, row-major (data[i][j] is row i, column j)
//   quat_t<T>        x, y, z, w (w is the real part)
//   transform_t<T>   p (vec_t<3,T>) then q (quat_t<T>): 7 components
// Every type is zero-initialised by default, supports operator[] and accumulates with +=
// (the adjoint convention needs +=).
#pragma once
#include "core.h"

namespace weft {

template <unsigned N, typename T>
struct vec_t {
    // Zeroed by the member initializer, not a loop in the constructor: GCC then inlines the
    // constructor everywhere, even into a kernel body past its large-function limits (a backward
    // body replaying its forward), where a loop made it a call per vector.
    T c[N] = {};
    WEFT_FN vec_t() {}
    WEFT_FN T& operator[](int i) { return c[i]; }
    WEFT_FN const T& operator[](int i) const { return c[i]; }
};

template <unsigned R, unsigned C, typename T>
struct mat_t {
    T data[R][C] = {};  // zeroed like vec_t's components
    WEFT_FN mat_t() {}
};

template <typename T>
struct quat_t {
    T x, y, z, w;
    WEFT_FN quat_t() : x(T(0)), y(T(0)), z(T(0)), w(T(0)) {}
    WEFT_FN quat_t(T x_, T y_, T z_, T w_) : x(x_), y(y_), z(z_), w(w_) {}
    // Component i by name: `(&x)[i]` steps past member x, which is undefined behaviour that an
    // optimizer may exploit in vectorized loops.
    WEFT_FN T& operator[](int i) { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
    WEFT_FN const T& operator[](int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};

template <typename T>
struct transform_t {
    vec_t<3, T> p;
    quat_t<T> q;
    WEFT_FN T& operator[](int i) { return i < 3 ? p.c[i] : q[i - 3]; }
    WEFT_FN const T& operator[](int i) const { return i < 3 ? p.c[i] : q[i - 3]; }
};

// Accumulation (adjoints). Component-wise, computing half precision in float.
template <typename T>
WEFT_FN void accum_component(T& a, const T& b) {
    a = T(float64(a) + float64(b));
}
WEFT_FN void accum_component(float32& a, const float32& b) { a += b; }
WEFT_FN void accum_component(float64& a, const float64& b) { a += b; }

template <unsigned N, typename T>
WEFT_FN vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i) accum_component(a.c[i], b.c[i]);
    return a;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) accum_component(a.data[i][j], b.data[i][j]);
    return a;
}
template <typename T>
WEFT_FN quat_t<T>& operator+=(quat_t<T>& a, const quat_t<T>& b) {
    for (int i = 0; i < 4; ++i) accum_component(a[i], b[i]);
    return a;
}
template <typename T>
WEFT_FN transform_t<T>& operator+=(transform_t<T>& a, const transform_t<T>& b) {
    a.p += b.p;
    a.q += b.q;
    return a;
}

// Component index errors (v[i] with i out of range) use the kernel error mechanism (code 2).
WEFT_FN void raise_component_error(int32 loc, int64 index, int32 size) {
    kernel_error e;
    e.code = 2;
    e.loc = loc;
    e.dim = 0;
    e.ndim = 1;
    for (int i = 0; i < 4; ++i) {
        e.index[i] = i == 0 ? index : 0;
        e.shape[i] = i == 0 ? size : 0;
    }
    raise_kernel_error(e);
}

}  // namespace weft
