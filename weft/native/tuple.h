// Multiple return values of funcs: a minimal tuple usable on CPU and CUDA.
#pragma once
#include "core.h"

namespace weft {

template <typename... T>
struct tuple_t;
template <>
struct tuple_t<> {};
template <typename H, typename... T>
struct tuple_t<H, T...> {
    H head;
    tuple_t<T...> tail;
};

template <int I>
struct tuple_at {
    template <typename H, typename... T>
    static WEFT_FN auto& get(tuple_t<H, T...>& t) { return tuple_at<I - 1>::get(t.tail); }
    template <typename H, typename... T>
    static WEFT_FN const auto& get(const tuple_t<H, T...>& t) { return tuple_at<I - 1>::get(t.tail); }
};
template <>
struct tuple_at<0> {
    template <typename H, typename... T>
    static WEFT_FN H& get(tuple_t<H, T...>& t) { return t.head; }
    template <typename H, typename... T>
    static WEFT_FN const H& get(const tuple_t<H, T...>& t) { return t.head; }
};

// Adjoints of tuples accumulate element-wise.
WEFT_FN tuple_t<>& operator+=(tuple_t<>& a, const tuple_t<>&) { return a; }
template <typename H, typename... T>
WEFT_FN tuple_t<H, T...>& operator+=(tuple_t<H, T...>& a, const tuple_t<H, T...>& b) {
    a.head += b.head;
    a.tail += b.tail;
    return a;
}

WEFT_FN tuple_t<> make_tuple() { return {}; }
template <typename H, typename... T>
WEFT_FN tuple_t<H, T...> make_tuple(H h, T... t) {
    tuple_t<H, T...> r;
    r.head = h;
    r.tail = make_tuple(t...);
    return r;
}

template <int I, typename Tup>
WEFT_FN auto tuple_get(const Tup& t) {
    return tuple_at<I>::get(t);
}

template <int I, typename Tup, typename V>
WEFT_FN void adj_tuple_get(const Tup& t, Tup& adj_t, V adj_ret) {
    tuple_at<I>::get(adj_t) += adj_ret;
}

// The adjoint of make_tuple is rendered inline: adj_arg_k += tuple_get<k>(adj_ret).

}  // namespace weft
