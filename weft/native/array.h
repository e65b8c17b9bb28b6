// Array element access and atomics, forward and adjoint (the adjoint convention of DESIGN.md:
// inputs..., adjoints of inputs..., adjoint of the result; adjoints only accumulate).
#pragma once
#include "core.h"

namespace weft {

template <typename T, typename... I>
WEFT_FN T load(const array_t<T>& a, int32 loc, I... idx) {
    return *elem_ptr(a.data, a, loc, int64(idx)...);
}

// The gradient of a read accumulates into the array's gradient (atomically: many threads may
// read the same element). Arrays without a gradient buffer drop it.
template <typename T, typename... I>
WEFT_FN void adj_load_impl(const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) atomic_add_raw(elem_ptr(a.grad, a, loc, int64(idx)...), adj_ret);
}

template <typename T, typename I0>
WEFT_FN void adj_load(const array_t<T>& a, int32 loc, I0 i0, T adj_ret) { adj_load_impl(a, loc, adj_ret, i0); }
template <typename T, typename I0, typename I1>
WEFT_FN void adj_load(const array_t<T>& a, int32 loc, I0 i0, I1 i1, T adj_ret) { adj_load_impl(a, loc, adj_ret, i0, i1); }
template <typename T, typename I0, typename I1, typename I2>
WEFT_FN void adj_load(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, T adj_ret) {
    adj_load_impl(a, loc, adj_ret, i0, i1, i2);
}
template <typename T, typename I0, typename I1, typename I2, typename I3>
WEFT_FN void adj_load(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, T adj_ret) {
    adj_load_impl(a, loc, adj_ret, i0, i1, i2, i3);
}

// The same, when only this thread can touch the element (the frontend proved the array is only
// indexed by the thread index): a plain add.
template <typename T, typename... I>
WEFT_FN void adj_load_exclusive_impl(const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) *elem_ptr(a.grad, a, loc, int64(idx)...) += adj_ret;
}
template <typename T, typename I0>
WEFT_FN void adj_load_exclusive(const array_t<T>& a, int32 loc, I0 i0, T adj_ret) {
    adj_load_exclusive_impl(a, loc, adj_ret, i0);
}
template <typename T, typename I0, typename I1>
WEFT_FN void adj_load_exclusive(const array_t<T>& a, int32 loc, I0 i0, I1 i1, T adj_ret) {
    adj_load_exclusive_impl(a, loc, adj_ret, i0, i1);
}
template <typename T, typename I0, typename I1, typename I2>
WEFT_FN void adj_load_exclusive(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, T adj_ret) {
    adj_load_exclusive_impl(a, loc, adj_ret, i0, i1, i2);
}
template <typename T, typename I0, typename I1, typename I2, typename I3>
WEFT_FN void adj_load_exclusive(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, T adj_ret) {
    adj_load_exclusive_impl(a, loc, adj_ret, i0, i1, i2, i3);
}

// store(a, loc, i..., value): variadic with the value last.
template <typename T>
WEFT_FN void store(const array_t<T>& a, int32 loc, int64 i0, T v) { *elem_ptr(a.data, a, loc, i0) = v; }
template <typename T>
WEFT_FN void store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v) { *elem_ptr(a.data, a, loc, i0, i1) = v; }
template <typename T>
WEFT_FN void store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v) {
    *elem_ptr(a.data, a, loc, i0, i1, i2) = v;
}
template <typename T>
WEFT_FN void store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v) {
    *elem_ptr(a.data, a, loc, i0, i1, i2, i3) = v;
}

// The adjoint of a write reads the element's gradient into the written value's adjoint and then
// clears it, so only the last write of an element receives its gradient (Warp's semantics);
// arrays flagged retain_grad keep their gradient.
template <typename T>
WEFT_FN void adj_store_at(const array_t<T>& a, T* g, T& adj_v) {
    adj_v += *g;
    if (!(a.flags & ARRAY_RETAIN_GRAD)) *g = T{};
}
template <typename T>
WEFT_FN void adj_store(const array_t<T>& a, int32 loc, int64 i0, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr(a.grad, a, loc, i0), adj_v);
}
template <typename T>
WEFT_FN void adj_store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr(a.grad, a, loc, i0, i1), adj_v);
}
template <typename T>
WEFT_FN void adj_store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr(a.grad, a, loc, i0, i1, i2), adj_v);
}
template <typename T>
WEFT_FN void adj_store(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr(a.grad, a, loc, i0, i1, i2, i3), adj_v);
}

// Atomics: atomic_OP(a, loc, i..., value) -> previous value.
#define WEFT_ATOMIC(OP, EXPR)                                                                            \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, T v) {                               \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0), v);                                           \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v) {                     \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1), v);                                       \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v) {           \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1, i2), v);                                   \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v) { \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1, i2, i3), v);                               \
    }

template <typename T>
WEFT_FN T atomic_sub_raw(T* p, T v) {
    return atomic_add_raw(p, T(-v));
}
WEFT_ATOMIC(add, add_raw)
WEFT_ATOMIC(sub, sub_raw)
WEFT_ATOMIC(min, min_raw)
WEFT_ATOMIC(max, max_raw)
#undef WEFT_ATOMIC

// Adjoints of atomics: adj_atomic_OP(a, loc, i..., value, adj_value&, adj_ret).
// add/sub pass the element's gradient to the value (no clearing: every contribution counts);
// min/max pass it only when the value is the one the element ended up holding.
template <typename T>
WEFT_FN T grad_at(const array_t<T>& a, T* g) {
    return g ? *g : T{};
}

// min/max: the value gets the gradient when the element ended up holding it. vec.h and mat.h
// overload this per component (Warp's semantics for atomic_min/max on vectors and matrices).
template <typename T>
WEFT_FN void adj_atomic_extremum(const T& cur, const T& v, T& adj_v, const T& g) {
    if (cur == v) adj_v += g;
}

#define WEFT_ADJ_ATOMIC(OP, BODY)                                                                               \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, T v, T& adj_v, T adj_ret) {          \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0);                                                                    \
        T cur = *elem_ptr(a.data, a, loc, i0);                                                                  \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v, T& adj_v, T adj_ret) { \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1);                                                                \
        T cur = *elem_ptr(a.data, a, loc, i0, i1);                                                              \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v, T& adj_v,    \
                                 T adj_ret) {                                                                   \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1, i2);                                                            \
        T cur = *elem_ptr(a.data, a, loc, i0, i1, i2);                                                          \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v,    \
                                 T& adj_v, T adj_ret) {                                                         \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1, i2, i3);                                                        \
        T cur = *elem_ptr(a.data, a, loc, i0, i1, i2, i3);                                                      \
        BODY;                                                                                                   \
    }

WEFT_ADJ_ATOMIC(add, (void)cur; adj_v += *g)
WEFT_ADJ_ATOMIC(sub, (void)cur; adj_v -= *g)
WEFT_ADJ_ATOMIC(min, adj_atomic_extremum(cur, v, adj_v, *g))
WEFT_ADJ_ATOMIC(max, adj_atomic_extremum(cur, v, adj_v, *g))
#undef WEFT_ADJ_ATOMIC

// Unchecked accesses, used only by a kernel's fast body for accesses indexed by the thread index
// when the launch checked once that the array covers the grid (so no index can be out of bounds).
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0) {
    return (T*)((char*)base + i0 * a.strides[0]);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1) {
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1]);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1, int64 i2) {
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2]);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1, int64 i2, int64 i3) {
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2] + i3 * a.strides[3]);
}

template <typename T, typename... I>
WEFT_FN T load_nc(const array_t<T>& a, int32 loc, I... idx) {
    return *elem_ptr_nc(a.data, a, int64(idx)...);
}
template <typename T>
WEFT_FN void store_nc(const array_t<T>& a, int32 loc, int64 i0, T v) { *elem_ptr_nc(a.data, a, i0) = v; }
template <typename T>
WEFT_FN void store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v) { *elem_ptr_nc(a.data, a, i0, i1) = v; }
template <typename T>
WEFT_FN void store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v) {
    *elem_ptr_nc(a.data, a, i0, i1, i2) = v;
}
template <typename T>
WEFT_FN void store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v) {
    *elem_ptr_nc(a.data, a, i0, i1, i2, i3) = v;
}

template <typename T, typename... I>
WEFT_FN void adj_load_nc_impl(const array_t<T>& a, T adj_ret, I... idx) {
    if (a.grad) atomic_add_raw(elem_ptr_nc(a.grad, a, int64(idx)...), adj_ret);
}
template <typename T, typename... I>
WEFT_FN void adj_load_exclusive_nc_impl(const array_t<T>& a, T adj_ret, I... idx) {
    if (a.grad) *elem_ptr_nc(a.grad, a, int64(idx)...) += adj_ret;
}
template <typename T, typename I0>
WEFT_FN void adj_load_nc(const array_t<T>& a, int32 loc, I0 i0, T adj_ret) { adj_load_nc_impl(a, adj_ret, i0); }
template <typename T, typename I0, typename I1>
WEFT_FN void adj_load_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, T adj_ret) {
    adj_load_nc_impl(a, adj_ret, i0, i1);
}
template <typename T, typename I0, typename I1, typename I2>
WEFT_FN void adj_load_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, T adj_ret) {
    adj_load_nc_impl(a, adj_ret, i0, i1, i2);
}
template <typename T, typename I0, typename I1, typename I2, typename I3>
WEFT_FN void adj_load_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, T adj_ret) {
    adj_load_nc_impl(a, adj_ret, i0, i1, i2, i3);
}
template <typename T, typename I0>
WEFT_FN void adj_load_exclusive_nc(const array_t<T>& a, int32 loc, I0 i0, T adj_ret) {
    adj_load_exclusive_nc_impl(a, adj_ret, i0);
}
template <typename T, typename I0, typename I1>
WEFT_FN void adj_load_exclusive_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, T adj_ret) {
    adj_load_exclusive_nc_impl(a, adj_ret, i0, i1);
}
template <typename T, typename I0, typename I1, typename I2>
WEFT_FN void adj_load_exclusive_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, T adj_ret) {
    adj_load_exclusive_nc_impl(a, adj_ret, i0, i1, i2);
}
template <typename T, typename I0, typename I1, typename I2, typename I3>
WEFT_FN void adj_load_exclusive_nc(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, T adj_ret) {
    adj_load_exclusive_nc_impl(a, adj_ret, i0, i1, i2, i3);
}

template <typename T>
WEFT_FN void adj_store_nc(const array_t<T>& a, int32 loc, int64 i0, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr_nc(a.grad, a, i0), adj_v);
}
template <typename T>
WEFT_FN void adj_store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr_nc(a.grad, a, i0, i1), adj_v);
}
template <typename T>
WEFT_FN void adj_store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr_nc(a.grad, a, i0, i1, i2), adj_v);
}
template <typename T>
WEFT_FN void adj_store_nc(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T& adj_v) {
    if (a.grad) adj_store_at(a, elem_ptr_nc(a.grad, a, i0, i1, i2, i3), adj_v);
}

}  // namespace weft
