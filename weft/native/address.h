#pragma once
// wp.address_of(x): the address of a variable, array element, struct field or component as a
// uint64, for native snippets (@wp.func_native) that read or write through it. Lvalue helpers:
// element_ref(a, loc, i...) is an array element (bounds-checked like a load), component_ref a
// component of a vector, quaternion, transform or matrix (indices checked like extract).
#include "array.h"
#include "vec.h"
#include "quat.h"
#include "transform.h"

namespace weft {

template <typename T>
WEFT_FN uint64 address_of(T& x) {
    return uint64(reinterpret_cast<uintptr_t>(&x));
}

template <typename T, typename... I>
WEFT_FN T& element_ref(const array_t<T>& a, int32 loc, I... idx) {
    return *elem_ptr(a.data, a, loc, int64(idx)...);
}

template <unsigned N, typename T, typename I>
WEFT_FN T& component_ref(vec_t<N, T>& v, int32 loc, I i) {
    return v.c[component_index(loc, i, N)];
}
template <typename T, typename I>
WEFT_FN T& component_ref(quat_t<T>& q, int32 loc, I i) {
    return q[component_index(loc, i, 4)];
}
template <typename T, typename I>
WEFT_FN T& component_ref(transform_t<T>& t, int32 loc, I i) {
    return t[component_index(loc, i, 7)];
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
WEFT_FN T& component_ref(mat_t<R, C, T>& m, int32 loc, I i, J j) {
    return m.data[component_index(loc, i, R)][component_index(loc, j, C)];
}

}  // namespace weft
