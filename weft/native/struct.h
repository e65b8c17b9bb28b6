// Support for @wp.struct types: generated structs define their fields and an operator+=
// (adjoint accumulation) that calls accumulate_field per field. Field access goes through
// pointers to members so that one template serves every struct.
#pragma once
#include "core.h"
#include "array.h"
#include "fabric.h"

namespace weft {

template <typename T>
WEFT_FN void accumulate_field(T& a, const T& b) {
    a += b;
}
// Array fields carry their gradient inside (array_t::grad): their adjoint is not accumulated.
template <typename T>
WEFT_FN void accumulate_field(array_t<T>&, const array_t<T>&) {}
template <typename T>
WEFT_FN void accumulate_field(indexedarray_t<T>&, const indexedarray_t<T>&) {}
template <typename T>
WEFT_FN void accumulate_field(fabricarray_t<T>&, const fabricarray_t<T>&) {}
template <typename T>
WEFT_FN void accumulate_field(indexedfabricarray_t<T>&, const indexedfabricarray_t<T>&) {}
WEFT_FN void accumulate_field(bool& a, const bool& b) { a = a || b; }

// Field-wise sums and differences of structs (tiles of structs add and subtract field by field);
// array fields keep the first operand's, bool fields too; their adjoints pass nothing.
template <typename T>
WEFT_FN T field_add(const T& a, const T& b) {
    return add(a, b);
}
template <typename T>
WEFT_FN T field_sub(const T& a, const T& b) {
    return sub(a, b);
}
template <typename T>
WEFT_FN void adj_field_add(const T& a, const T& b, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_add(a, b, adj_a, adj_b, adj_ret);
}
template <typename T>
WEFT_FN void adj_field_sub(const T& a, const T& b, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_sub(a, b, adj_a, adj_b, adj_ret);
}
#define WEFT_KEEP_FIRST_FIELD(T, ...)                                                                         \
    template <__VA_ARGS__>                                                                                    \
    WEFT_FN T field_add(const T& a, const T&) { return a; }                                                  \
    template <__VA_ARGS__>                                                                                    \
    WEFT_FN T field_sub(const T& a, const T&) { return a; }                                                  \
    template <__VA_ARGS__>                                                                                    \
    WEFT_FN void adj_field_add(const T&, const T&, T&, T&, const T&) {}                                      \
    template <__VA_ARGS__>                                                                                    \
    WEFT_FN void adj_field_sub(const T&, const T&, T&, T&, const T&) {}
WEFT_KEEP_FIRST_FIELD(array_t<T>, typename T)
WEFT_KEEP_FIRST_FIELD(indexedarray_t<T>, typename T)
WEFT_KEEP_FIRST_FIELD(fabricarray_t<T>, typename T)
WEFT_KEEP_FIRST_FIELD(indexedfabricarray_t<T>, typename T)
#undef WEFT_KEEP_FIRST_FIELD
WEFT_FN bool field_add(const bool& a, const bool&) { return a; }
WEFT_FN bool field_sub(const bool& a, const bool&) { return a; }
WEFT_FN void adj_field_add(const bool&, const bool&, bool&, bool&, const bool&) {}
WEFT_FN void adj_field_sub(const bool&, const bool&, bool&, bool&, const bool&) {}

template <typename S>
WEFT_FN S struct_zero() {
    return S{};
}
template <typename S>
WEFT_FN void adj_struct_zero(const S&) {}

template <typename S, typename F>
WEFT_FN F get_field(const S& s, F S::*m) {
    return s.*m;
}
template <typename S, typename F>
WEFT_FN void adj_get_field(const S& s, F S::*m, S& adj_s, const F& adj_ret) {
    accumulate_field(adj_s.*m, adj_ret);
}

template <typename S, typename F>
WEFT_FN S set_field(S s, F S::*m, const F& v) {
    s.*m = v;
    return s;
}
template <typename S, typename F>
WEFT_FN void adj_set_field(const S& s, F S::*m, const F& v, S& adj_s, F& adj_v, const S& adj_ret) {
    accumulate_field(adj_v, adj_ret.*m);
    S rest = adj_ret;
    rest.*m = F{};
    adj_s += rest;
}

}  // namespace weft
