// isnan / isinf / isfinite of float vectors, matrices, quaternions and transforms: any component
// NaN, any component infinite, every component finite (Warp's semantics). The components of a
// composite are contiguous scalars (element_traits, array.h).
#pragma once
#include "transform.h"

namespace weft {
namespace classify_detail {
template <typename T>
WEFT_FN const typename element_traits<T>::scalar* components(const T& x) {
    return reinterpret_cast<const typename element_traits<T>::scalar*>(&x);
}
template <typename T>
WEFT_FN bool any_nan(const T& x) {
    for (unsigned i = 0; i < element_traits<T>::components; ++i)
        if (isnan(components(x)[i])) return true;
    return false;
}
template <typename T>
WEFT_FN bool any_inf(const T& x) {
    for (unsigned i = 0; i < element_traits<T>::components; ++i)
        if (isinf(components(x)[i])) return true;
    return false;
}
template <typename T>
WEFT_FN bool all_finite(const T& x) {
    for (unsigned i = 0; i < element_traits<T>::components; ++i)
        if (!isfinite(components(x)[i])) return false;
    return true;
}
}  // namespace classify_detail

template <unsigned N, typename T>
WEFT_FN bool isnan(const vec_t<N, T>& x) { return classify_detail::any_nan(x); }
template <unsigned N, typename T>
WEFT_FN bool isinf(const vec_t<N, T>& x) { return classify_detail::any_inf(x); }
template <unsigned N, typename T>
WEFT_FN bool isfinite(const vec_t<N, T>& x) { return classify_detail::all_finite(x); }
template <unsigned R, unsigned C, typename T>
WEFT_FN bool isnan(const mat_t<R, C, T>& x) { return classify_detail::any_nan(x); }
template <unsigned R, unsigned C, typename T>
WEFT_FN bool isinf(const mat_t<R, C, T>& x) { return classify_detail::any_inf(x); }
template <unsigned R, unsigned C, typename T>
WEFT_FN bool isfinite(const mat_t<R, C, T>& x) { return classify_detail::all_finite(x); }
template <typename T>
WEFT_FN bool isnan(const quat_t<T>& x) { return classify_detail::any_nan(x); }
template <typename T>
WEFT_FN bool isinf(const quat_t<T>& x) { return classify_detail::any_inf(x); }
template <typename T>
WEFT_FN bool isfinite(const quat_t<T>& x) { return classify_detail::all_finite(x); }
template <typename T>
WEFT_FN bool isnan(const transform_t<T>& x) { return classify_detail::any_nan(x); }
template <typename T>
WEFT_FN bool isinf(const transform_t<T>& x) { return classify_detail::any_inf(x); }
template <typename T>
WEFT_FN bool isfinite(const transform_t<T>& x) { return classify_detail::all_finite(x); }
}  // namespace weft
