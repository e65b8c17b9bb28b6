// weft 3x3 decompositions: svd3, qr3, eig3 (and svd2 for 2x2), with adjoints. T = float16/32/64
// (eig3 computed in float64 for every type; the others compute float16 in float32). Warp writes
// the results to output arguments; weft returns them as a tuple_t (tuple.h) and the frontend
// lowers `wp.svd3(A, U, sigma, V)` / `U, sigma, V = wp.svd3(A)` to one call:
//   svd3(A) -> tuple_t<mat33, vec3, mat33>  (U, sigma, V)     adj_svd3(A, adj_A&, adj_ret)
//   qr3(A)  -> tuple_t<mat33, mat33>        (Q, R)            adj_qr3(A, adj_A&, adj_ret)
//   eig3(A) -> tuple_t<mat33, vec3>         (Q, d)            adj_eig3(A, adj_A&, adj_ret)
//
// The algorithms are those of McAdams et al., "Computing the Singular Value Decomposition of 3x3
// matrices with minimal branching and elementary floating point operations" (2011), which is what
// Warp 1.19 computes: its outputs agree with Warp's to rounding (checked on random float64
// matrices; only bases of repeated singular values/eigenvalues may differ):
//   - eig3: cyclic Jacobi on the symmetric matrix built from the LOWER triangle of A (the upper
//     triangle is ignored, like Warp), 8 sweeps over the pairs (0,1), (1,2), (2,0), each an
//     approximate Givens rotation (fixed pi/4 rotation when the off-diagonal term is not small
//     relative to the diagonal difference). Eigenvalues are NOT sorted; Q is a rotation
//     (det +1), eigenvectors in its columns; A = Q diag(d) Q^T.
//   - svd3: Jacobi on A^T A gives V; the columns of B = A V are sorted by decreasing norm (a swap
//     negates one column so that det V stays +1); a Givens QR of B gives U and sigma = diag(R).
//     So U, V are rotations, |sigma| decreases, sigma[0], sigma[1] >= 0 and sigma[2] has the sign
//     of det(A); A = U diag(sigma) V^T.
//   - qr3: Givens QR zeroing (1,0), (2,0), (2,1) in that order; Q is a rotation, R[0][0],
//     R[1][1] >= 0, R[2][2] carries the sign of det(A). R's lower entries are rounding residue,
//     not forced to 0 (like Warp). A Givens step is skipped when the norm of the pair is below
//     1e-6 (float32/float16) or 1e-12 (float64) -- Warp's thresholds, probed.
// Adjoints (the derivative of the decomposition, which the fixed-iteration forward computes to
// rounding):
//   - svd3: adj_A = U (J diag(s) + diag(adj_s) + diag(s) K) V^T, J = F o (U^T adj_U - adj_U^T U),
//     K = F o (V^T adj_V - adj_V^T V), F_ij = 1 / (s_j^2 - s_i^2) (i != j).
//   - eig3: G = Q (diag(adj_d) + F o (Q^T adj_Q)) Q^T, F_ij = 1 / (d_j - d_i); since only the
//     lower triangle is read, adj_A[i][i] += G_ii and adj_A[i][j] += G_ij + G_ji for i > j.
//   - qr3: adj_A = Q (adj_R + N R^-T), N = tril(M - M^T, -1), M = Q^T adj_Q - adj_R R^T, with adj_R
//     restricted to the upper triangle; N R^-T needs only R[0][0], R[0][1], R[1][1], so the
//     gradient stays finite for rank-2 A.
//   F is set to 0 where the two values coincide to within a relative 1e-6 (float) / 1e-12
//   (double): there the singular/eigen-vectors are not unique and their gradient does not exist;
//   losses of the values alone (sum, sum of squares, ...) keep an exact gradient.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "scalar.h"
#include "tuple.h"
#include "vec_types.h"

namespace weft {

namespace linalg_detail {

template <typename R>
struct lin_eps {
    static constexpr R qr = R(1e-6);     // Givens skip threshold (Warp's, float)
    static constexpr R guard = R(1e-6);  // relative gap below which F_ij = 0
};
template <>
struct lin_eps<double> {
    static constexpr double qr = 1e-12;
    static constexpr double guard = 1e-12;
};

template <typename R>
struct m33 {
    R a[3][3];
};

template <typename R>
WEFT_FN m33<R> lin_eye() {
    m33<R> m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m.a[i][j] = i == j ? R(1) : R(0);
    return m;
}
template <typename R, typename T>
WEFT_FN m33<R> lin_load(const mat_t<3, 3, T>& x) {
    m33<R> m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m.a[i][j] = R(x.data[i][j]);
    return m;
}
template <typename T, typename R>
WEFT_FN mat_t<3, 3, T> lin_store(const m33<R>& m) {
    mat_t<3, 3, T> x;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) x.data[i][j] = T(m.a[i][j]);
    return x;
}
template <typename T, typename R>
WEFT_FN void lin_acc(mat_t<3, 3, T>& adj, const m33<R>& g) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) accum(adj.data[i][j], compute_t<T>(g.a[i][j]));
}
// a b, a^T b, a b^T
template <typename R>
WEFT_FN m33<R> lin_mm(const m33<R>& a, const m33<R>& b) {
    m33<R> r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.a[i][j] = a.a[i][0] * b.a[0][j] + a.a[i][1] * b.a[1][j] + a.a[i][2] * b.a[2][j];
    return r;
}
template <typename R>
WEFT_FN m33<R> lin_mtm(const m33<R>& a, const m33<R>& b) {
    m33<R> r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.a[i][j] = a.a[0][i] * b.a[0][j] + a.a[1][i] * b.a[1][j] + a.a[2][i] * b.a[2][j];
    return r;
}
template <typename R>
WEFT_FN m33<R> lin_mmt(const m33<R>& a, const m33<R>& b) {
    m33<R> r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.a[i][j] = a.a[i][0] * b.a[j][0] + a.a[i][1] * b.a[j][1] + a.a[i][2] * b.a[j][2];
    return r;
}

// Right-multiplies columns p, q of m by the plane rotation G (G_pp = G_qq = c, G_pq = -s, G_qp = s).
template <typename R>
WEFT_FN void lin_rot_cols(m33<R>& m, int p, int q, R c, R s) {
    for (int k = 0; k < 3; ++k) {
        R mp = m.a[k][p], mq = m.a[k][q];
        m.a[k][p] = c * mp + s * mq;
        m.a[k][q] = -s * mp + c * mq;
    }
}
// Left-multiplies rows p, q of m by G^T.
template <typename R>
WEFT_FN void lin_rot_rows(m33<R>& m, int p, int q, R c, R s) {
    for (int k = 0; k < 3; ++k) {
        R mp = m.a[p][k], mq = m.a[q][k];
        m.a[p][k] = c * mp + s * mq;
        m.a[q][k] = -s * mp + c * mq;
    }
}

// Cyclic Jacobi with approximate Givens rotations: S <- V^T S V converges to diagonal.
template <typename R>
WEFT_FN void lin_jacobi(m33<R>& S, m33<R>& V) {
    const R gamma = R(5.82842712474619009760);   // 3 + 2 sqrt(2)
    const R cstar = R(0.92387953251128675613);   // cos(pi/8)
    const R sstar = R(0.38268343236508977173);   // sin(pi/8)
    V = lin_eye<R>();
    for (int sweep = 0; sweep < 8; ++sweep) {
        for (int k = 0; k < 3; ++k) {
            int p = k, q = (k + 1) % 3;
            R ch = R(2) * (S.a[p][p] - S.a[q][q]), sh = S.a[p][q];
            if (gamma * sh * sh < ch * ch) {
                R w = R(1) / fmath::sqrt(ch * ch + sh * sh);
                ch *= w;
                sh *= w;
            } else {
                ch = cstar;
                sh = sstar;
            }
            R c = ch * ch - sh * sh, s = R(2) * ch * sh;
            lin_rot_cols(S, p, q, c, s);
            lin_rot_rows(S, p, q, c, s);
            lin_rot_cols(V, p, q, c, s);
        }
    }
}

// The rotation that zeroes a2 against the pivot a1 (a1 ends up >= 0).
template <typename R>
WEFT_FN void lin_qr_givens(R a1, R a2, R& c, R& s) {
    const R eps = lin_eps<R>::qr;
    R rho = fmath::sqrt(a1 * a1 + a2 * a2);
    R sh = rho > eps ? a2 : R(0);
    R ch = fmath::fabs(a1) + (rho > eps ? rho : eps);
    if (a1 < R(0)) {
        R t = sh;
        sh = ch;
        ch = t;
    }
    R w = R(1) / fmath::sqrt(ch * ch + sh * sh);
    ch *= w;
    sh *= w;
    c = ch * ch - sh * sh;
    s = R(2) * ch * sh;
}

// B = Q R; Q a product of three rotations.
template <typename R>
WEFT_FN void lin_qr(const m33<R>& B, m33<R>& Q, m33<R>& Rm) {
    Rm = B;
    Q = lin_eye<R>();
    const int ps[3] = {0, 0, 1}, qs[3] = {1, 2, 2};
    for (int k = 0; k < 3; ++k) {
        int p = ps[k], q = qs[k];
        R c, s;
        lin_qr_givens(Rm.a[p][p], Rm.a[q][p], c, s);
        lin_rot_rows(Rm, p, q, c, s);
        lin_rot_cols(Q, p, q, c, s);
    }
}

// Swaps columns i and j of B and V, negating the new column j (keeps det V), and the norms.
template <typename R>
WEFT_FN void lin_cond_neg_swap(bool cond, m33<R>& B, m33<R>& V, R* rho, int i, int j) {
    if (!cond) return;
    for (int k = 0; k < 3; ++k) {
        R b = B.a[k][i], v = V.a[k][i];
        B.a[k][i] = B.a[k][j];
        B.a[k][j] = -b;
        V.a[k][i] = V.a[k][j];
        V.a[k][j] = -v;
    }
    R t = rho[i];
    rho[i] = rho[j];
    rho[j] = t;
}

template <typename R>
WEFT_FN void lin_svd(const m33<R>& A, m33<R>& U, R* s, m33<R>& V) {
    m33<R> S = lin_mtm(A, A);
    lin_jacobi(S, V);
    m33<R> B = lin_mm(A, V);
    R rho[3];
    for (int j = 0; j < 3; ++j) rho[j] = B.a[0][j] * B.a[0][j] + B.a[1][j] * B.a[1][j] + B.a[2][j] * B.a[2][j];
    lin_cond_neg_swap(rho[0] < rho[1], B, V, rho, 0, 1);
    lin_cond_neg_swap(rho[0] < rho[2], B, V, rho, 0, 2);
    lin_cond_neg_swap(rho[1] < rho[2], B, V, rho, 1, 2);
    m33<R> Rm;
    lin_qr(B, U, Rm);
    for (int i = 0; i < 3; ++i) s[i] = Rm.a[i][i];
}

// The symmetric matrix eig3 decomposes: A's lower triangle mirrored.
template <typename R, typename T>
WEFT_FN m33<R> lin_lower_sym(const mat_t<3, 3, T>& A) {
    m33<R> M;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j <= i; ++j) M.a[i][j] = M.a[j][i] = R(A.data[i][j]);
    return M;
}

// 1 / (b - a), or 0 when a and b coincide to within the relative guard (that of G's precision:
// the values' type, when they are computed in a wider one).
template <typename R, typename G = R>
WEFT_FN R lin_inv_gap(R a, R b) {
    R d = b - a, scale = fmath::fabs(a) > fmath::fabs(b) ? fmath::fabs(a) : fmath::fabs(b);
    if (!(fmath::fabs(d) > R(lin_eps<G>::guard) * scale) || d == R(0)) return R(0);
    return R(1) / d;
}

// eig3 computes in float64 whatever the type: float32 Jacobi sweeps left rounding noise that
// central differences with a 1e-4 step turned into gradients off by up to 0.04 (Warp's own
// check of eig3's gradient failed); its outputs are the float64 decomposition rounded once.
template <typename T>
using eig_t = double;

}  // namespace linalg_detail

// ---------------------------------------------------------------------------------------------
// svd2: closed form. With E = (a+d)/2, F = (a-d)/2, G = (c+b)/2, H = (c-b)/2:
// sigma = (|(E, H)| + |(F, G)|, |(E, H)| - |(F, G)|) (the second has the sign of det A),
// U = rot((atan2(H, E) + atan2(G, F)) / 2), V = rot((atan2(G, F) - atan2(H, E)) / 2), A = U S V^T;
// U and V are rotations. Adjoint: svd3's formula on 2x2.

namespace linalg_detail {
template <typename R>
WEFT_FN void lin_svd2(R a, R b, R c, R d, R U[2][2], R s[2], R V[2][2]) {
    R E = (a + d) * R(0.5), F = (a - d) * R(0.5), G = (c + b) * R(0.5), H = (c - b) * R(0.5);
    R Q = fmath::sqrt(E * E + H * H), P = fmath::sqrt(F * F + G * G);
    s[0] = Q + P;
    s[1] = Q - P;
    R a1 = fmath::atan2(G, F), a2 = fmath::atan2(H, E);
    R phi = (a2 + a1) * R(0.5), theta = (a2 - a1) * R(0.5);
    R cu = fmath::cos(phi), su = fmath::sin(phi), cv = fmath::cos(theta), sv = fmath::sin(theta);
    U[0][0] = cu, U[0][1] = -su, U[1][0] = su, U[1][1] = cu;
    V[0][0] = cv, V[0][1] = sv, V[1][0] = -sv, V[1][1] = cv;  // V = rot(theta)^T
}
}  // namespace linalg_detail

template <typename T>
WEFT_FN tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>> svd2(const mat_t<2, 2, T>& A) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    R U[2][2], s[2], V[2][2];
    lin_svd2(R(A.data[0][0]), R(A.data[0][1]), R(A.data[1][0]), R(A.data[1][1]), U, s, V);
    mat_t<2, 2, T> u, v;
    vec_t<2, T> sigma;
    for (int i = 0; i < 2; ++i) {
        sigma.c[i] = T(s[i]);
        for (int j = 0; j < 2; ++j) {
            u.data[i][j] = T(U[i][j]);
            v.data[i][j] = T(V[i][j]);
        }
    }
    return make_tuple(u, sigma, v);
}

template <typename T>
WEFT_FN void adj_svd2(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& adj_A,
                      const tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>& adj_ret) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    R U[2][2], s[2], V[2][2];
    lin_svd2(R(A.data[0][0]), R(A.data[0][1]), R(A.data[1][0]), R(A.data[1][1]), U, s, V);
    const mat_t<2, 2, T>& gU = tuple_get<0>(adj_ret);
    const vec_t<2, T>& gs = tuple_get<1>(adj_ret);
    const mat_t<2, 2, T>& gV = tuple_get<2>(adj_ret);
    R UtgU[2][2], VtgV[2][2], inner[2][2], tmp[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            UtgU[i][j] = U[0][i] * R(gU.data[0][j]) + U[1][i] * R(gU.data[1][j]);
            VtgV[i][j] = V[0][i] * R(gV.data[0][j]) + V[1][i] * R(gV.data[1][j]);
        }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            if (i == j) {
                inner[i][j] = R(gs.c[i]);
                continue;
            }
            R f = lin_inv_gap(s[i] * s[i], s[j] * s[j]);  // 1 / (s_j^2 - s_i^2)
            inner[i][j] = f * (UtgU[i][j] - UtgU[j][i]) * s[j] + s[i] * f * (VtgV[i][j] - VtgV[j][i]);
        }
    for (int i = 0; i < 2; ++i)  // tmp = U inner
        for (int j = 0; j < 2; ++j) tmp[i][j] = U[i][0] * inner[0][j] + U[i][1] * inner[1][j];
    for (int i = 0; i < 2; ++i)  // adj_A += tmp V^T
        for (int j = 0; j < 2; ++j) accum(adj_A.data[i][j], tmp[i][0] * V[j][0] + tmp[i][1] * V[j][1]);
}

// ---------------------------------------------------------------------------------------------
// svd3

template <typename T>
WEFT_FN tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>> svd3(const mat_t<3, 3, T>& A) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    m33<R> U, V;
    R s[3];
    lin_svd(lin_load<R>(A), U, s, V);
    vec_t<3, T> sigma;
    for (int i = 0; i < 3; ++i) sigma.c[i] = T(s[i]);
    return make_tuple(lin_store<T>(U), sigma, lin_store<T>(V));
}

template <typename T>
WEFT_FN void adj_svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A,
                      const tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>>& adj_ret) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    m33<R> U, V;
    R s[3];
    lin_svd(lin_load<R>(A), U, s, V);
    m33<R> gU = lin_load<R>(tuple_get<0>(adj_ret)), gV = lin_load<R>(tuple_get<2>(adj_ret));
    const vec_t<3, T>& gs = tuple_get<1>(adj_ret);
    m33<R> UtgU = lin_mtm(U, gU), VtgV = lin_mtm(V, gV), inner;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            if (i == j) {
                inner.a[i][j] = R(gs.c[i]);
                continue;
            }
            R f = lin_inv_gap(s[i] * s[i], s[j] * s[j]);  // 1 / (s_j^2 - s_i^2)
            R J = f * (UtgU.a[i][j] - UtgU.a[j][i]);
            R K = f * (VtgV.a[i][j] - VtgV.a[j][i]);
            inner.a[i][j] = J * s[j] + s[i] * K;
        }
    lin_acc(adj_A, lin_mmt(lin_mm(U, inner), V));
}

// ---------------------------------------------------------------------------------------------
// qr3

template <typename T>
WEFT_FN tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>> qr3(const mat_t<3, 3, T>& A) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    m33<R> Q, Rm;
    lin_qr(lin_load<R>(A), Q, Rm);
    return make_tuple(lin_store<T>(Q), lin_store<T>(Rm));
}

template <typename T>
WEFT_FN void adj_qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A,
                     const tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>>& adj_ret) {
    using namespace linalg_detail;
    typedef compute_t<T> R;
    m33<R> Q, Rm;
    lin_qr(lin_load<R>(A), Q, Rm);
    m33<R> gQ = lin_load<R>(tuple_get<0>(adj_ret)), gR = lin_load<R>(tuple_get<1>(adj_ret));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < i; ++j) {
            gR.a[i][j] = R(0);  // R is upper triangular: its lower entries carry no gradient
            Rm.a[i][j] = R(0);
        }
    m33<R> M = lin_mtm(Q, gQ), RRt = lin_mmt(gR, Rm);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) M.a[i][j] -= RRt.a[i][j];
    // X = N R^-T row by row: R x = n^T with n = row i of N (n_2 = 0, so x_2 = 0).
    m33<R> X;
    for (int i = 1; i < 3; ++i) {
        R n0 = M.a[i][0] - M.a[0][i];
        R n1 = i == 2 ? M.a[2][1] - M.a[1][2] : R(0);
        R x1 = n1 != R(0) ? n1 / Rm.a[1][1] : R(0);
        R x0 = (n0 - Rm.a[0][1] * x1) / Rm.a[0][0];
        X.a[i][0] = x0;
        X.a[i][1] = x1;
        X.a[i][2] = R(0);
    }
    for (int j = 0; j < 3; ++j) X.a[0][j] = R(0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) X.a[i][j] += gR.a[i][j];
    lin_acc(adj_A, lin_mm(Q, X));
}

// ---------------------------------------------------------------------------------------------
// eig3

template <typename T>
WEFT_FN tuple_t<mat_t<3, 3, T>, vec_t<3, T>> eig3(const mat_t<3, 3, T>& A) {
    using namespace linalg_detail;
    typedef eig_t<T> R;
    m33<R> S = lin_lower_sym<R>(A), Q;
    lin_jacobi(S, Q);
    m33<R> AQ = lin_mm(lin_load<R>(A), Q);
    vec_t<3, T> d;
    for (int i = 0; i < 3; ++i) d.c[i] = T(Q.a[0][i] * AQ.a[0][i] + Q.a[1][i] * AQ.a[1][i] + Q.a[2][i] * AQ.a[2][i]);
    return make_tuple(lin_store<T>(Q), d);
}

template <typename T>
WEFT_FN void adj_eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A,
                      const tuple_t<mat_t<3, 3, T>, vec_t<3, T>>& adj_ret) {
    using namespace linalg_detail;
    typedef eig_t<T> R;
    m33<R> S = lin_lower_sym<R>(A), Q;
    lin_jacobi(S, Q);
    m33<R> Af = lin_load<R>(A);
    const vec_t<3, T>& gd = tuple_get<1>(adj_ret);
    // d_i = q_i^T A q_i: adj_A += Q diag(adj_d) Q^T (every entry), adj_Q += (A + A^T) Q diag(adj_d).
    m33<R> QD, gQ = lin_load<R>(tuple_get<0>(adj_ret));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) QD.a[i][j] = Q.a[i][j] * R(gd.c[j]);
    lin_acc(adj_A, lin_mmt(QD, Q));
    m33<R> AQD = lin_mm(Af, QD), AtQD = lin_mtm(Af, QD);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) gQ.a[i][j] += AQD.a[i][j] + AtQD.a[i][j];
    // Q: eigenvectors of the lower-triangle matrix M, eigenvalues diag(S).
    m33<R> QtgQ = lin_mtm(Q, gQ), inner;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            inner.a[i][j] = i == j ? R(0) : lin_inv_gap<R, compute_t<T>>(S.a[i][i], S.a[j][j]) * QtgQ.a[i][j];
    m33<R> G = lin_mmt(lin_mm(Q, inner), Q);
    for (int i = 0; i < 3; ++i) {
        accum(adj_A.data[i][i], compute_t<T>(G.a[i][i]));
        for (int j = 0; j < i; ++j) accum(adj_A.data[i][j], compute_t<T>(G.a[i][j] + G.a[j][i]));
    }
}

}  // namespace weft
