// weft spatial-algebra builtins (Featherstone): spatial_vector = vec_t<6, T> = (w, v), angular
// part on top; spatial_matrix = mat_t<6, 6, T>. T = float16/32/64, float16 computed in float32.
// Arithmetic on spatial vectors/matrices (add, mul, dot, outer, transpose, ...) is the generic
// vec.h / mat.h code; this header holds the builtins specific to spatial algebra.
//
// Calling convention as in quat.h; constructors take the result type first:
//   weft::spatial_vector_from_parts<V>(w, v)  (Warp's spatial_vector(w, v))
//
// Semantics, checked against warp-lang 1.19 on the CPU (float64 probes), a = (wa, va), b = (wb, vb):
//   spatial_top(a) = wa, spatial_bottom(a) = va, spatial_dot(a, b) = a . b (all 6 components),
//   spatial_cross(a, b)      = (wa x wb, wa x vb + va x wb)   (motion cross product)
//   spatial_cross_dual(a, b) = (wa x wb + va x vb, wa x vb)   (force cross product)
//   spatial_adjoint(R, S)    = [[R, 0], [S, R]]               (6x6 from two 3x3 blocks)
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "quat.h"

namespace weft {

namespace spatial_detail {

template <typename T>
WEFT_FN vec_t<3, compute_t<T>> sp_part(const vec_t<6, T>& a, int off) {
    vec_t<3, compute_t<T>> r;
    for (int i = 0; i < 3; ++i) r.c[i] = compute_t<T>(a.c[off + i]);
    return r;
}
template <typename T, typename R>
WEFT_FN vec_t<6, T> sp_join(const vec_t<3, R>& top, const vec_t<3, R>& bottom) {
    vec_t<6, T> r;
    for (int i = 0; i < 3; ++i) {
        r.c[i] = T(top.c[i]);
        r.c[3 + i] = T(bottom.c[i]);
    }
    return r;
}
template <typename T, typename R>
WEFT_FN void sp_acc_part(vec_t<6, T>& adj, int off, const vec_t<3, R>& g) {
    for (int i = 0; i < 3; ++i) accum(adj.c[off + i], compute_t<T>(g.c[i]));
}
template <typename R>
WEFT_FN vec_t<3, R> sp_add3(const vec_t<3, R>& a, const vec_t<3, R>& b) {
    vec_t<3, R> r;
    for (int i = 0; i < 3; ++i) r.c[i] = a.c[i] + b.c[i];
    return r;
}

}  // namespace spatial_detail

template <typename V, typename T>
WEFT_FN V spatial_vector_from_parts(const vec_t<3, T>& w, const vec_t<3, T>& v) {
    V r;
    for (int i = 0; i < 3; ++i) {
        r.c[i] = w.c[i];
        r.c[3 + i] = v.c[i];
    }
    return r;
}
template <typename V, typename T>
WEFT_FN void adj_spatial_vector_from_parts(const vec_t<3, T>& w, const vec_t<3, T>& v, vec_t<3, T>& adj_w,
                                           vec_t<3, T>& adj_v, const V& adj_ret) {
    for (int i = 0; i < 3; ++i) {
        accum(adj_w.c[i], compute_t<T>(adj_ret.c[i]));
        accum(adj_v.c[i], compute_t<T>(adj_ret.c[3 + i]));
    }
}

template <typename T>
WEFT_FN vec_t<3, T> spatial_top(const vec_t<6, T>& a) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) r.c[i] = a.c[i];
    return r;
}
template <typename T>
WEFT_FN void adj_spatial_top(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    for (int i = 0; i < 3; ++i) accum(adj_a.c[i], compute_t<T>(adj_ret.c[i]));
}
template <typename T>
WEFT_FN vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) r.c[i] = a.c[3 + i];
    return r;
}
template <typename T>
WEFT_FN void adj_spatial_bottom(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    for (int i = 0; i < 3; ++i) accum(adj_a.c[3 + i], compute_t<T>(adj_ret.c[i]));
}

template <typename T>
WEFT_FN T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    typedef compute_t<T> R;
    R s = R(0);
    for (int i = 0; i < 6; ++i) s += R(a.c[i]) * R(b.c[i]);
    return T(s);
}
template <typename T>
WEFT_FN void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                             T adj_ret) {
    typedef compute_t<T> R;
    R g = R(adj_ret);
    for (int i = 0; i < 6; ++i) {
        accum(adj_a.c[i], R(b.c[i]) * g);
        accum(adj_b.c[i], R(a.c[i]) * g);
    }
}

// (wa x wb, wa x vb + va x wb)
template <typename T>
WEFT_FN vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    using namespace spatial_detail;
    using quat_detail::r_cross;
    typedef compute_t<T> R;
    vec_t<3, R> wa = sp_part(a, 0), va = sp_part(a, 3), wb = sp_part(b, 0), vb = sp_part(b, 3);
    return sp_join<T>(r_cross(wa, wb), sp_add3(r_cross(wa, vb), r_cross(va, wb)));
}
// <g, x cross y> = <x, y cross g> = <y, g cross x>.
template <typename T>
WEFT_FN void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                               const vec_t<6, T>& adj_ret) {
    using namespace spatial_detail;
    using quat_detail::r_cross;
    typedef compute_t<T> R;
    vec_t<3, R> wa = sp_part(a, 0), va = sp_part(a, 3), wb = sp_part(b, 0), vb = sp_part(b, 3);
    vec_t<3, R> gw = sp_part(adj_ret, 0), gv = sp_part(adj_ret, 3);
    sp_acc_part(adj_a, 0, sp_add3(r_cross(wb, gw), r_cross(vb, gv)));
    sp_acc_part(adj_a, 3, r_cross(wb, gv));
    sp_acc_part(adj_b, 0, sp_add3(r_cross(gw, wa), r_cross(gv, va)));
    sp_acc_part(adj_b, 3, r_cross(gv, wa));
}

// (wa x wb + va x vb, wa x vb)
template <typename T>
WEFT_FN vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    using namespace spatial_detail;
    using quat_detail::r_cross;
    typedef compute_t<T> R;
    vec_t<3, R> wa = sp_part(a, 0), va = sp_part(a, 3), wb = sp_part(b, 0), vb = sp_part(b, 3);
    return sp_join<T>(sp_add3(r_cross(wa, wb), r_cross(va, vb)), r_cross(wa, vb));
}
template <typename T>
WEFT_FN void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                    vec_t<6, T>& adj_b, const vec_t<6, T>& adj_ret) {
    using namespace spatial_detail;
    using quat_detail::r_cross;
    typedef compute_t<T> R;
    vec_t<3, R> wa = sp_part(a, 0), va = sp_part(a, 3), wb = sp_part(b, 0), vb = sp_part(b, 3);
    vec_t<3, R> gw = sp_part(adj_ret, 0), gv = sp_part(adj_ret, 3);
    sp_acc_part(adj_a, 0, sp_add3(r_cross(wb, gw), r_cross(vb, gv)));
    sp_acc_part(adj_a, 3, r_cross(vb, gw));
    sp_acc_part(adj_b, 0, r_cross(gw, wa));
    sp_acc_part(adj_b, 3, sp_add3(r_cross(gw, va), r_cross(gv, wa)));
}

// [[R, 0], [S, R]]
template <typename T>
WEFT_FN mat_t<6, 6, T> spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s) {
    mat_t<6, 6, T> m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            m.data[i][j] = r.data[i][j];
            m.data[3 + i][3 + j] = r.data[i][j];
            m.data[3 + i][j] = s.data[i][j];
        }
    return m;
}
template <typename T>
WEFT_FN void adj_spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s, mat_t<3, 3, T>& adj_r,
                                 mat_t<3, 3, T>& adj_s, const mat_t<6, 6, T>& adj_ret) {
    typedef compute_t<T> R;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            accum(adj_r.data[i][j], R(adj_ret.data[i][j]) + R(adj_ret.data[3 + i][3 + j]));
            accum(adj_s.data[i][j], R(adj_ret.data[3 + i][j]));
        }
}

}  // namespace weft
