// Checks weft's own float32 math (weft/native/math_f32.h) on float32 inputs, all 2^32 by default:
//   - log: every finite positive input against log computed in long double (64-bit significand)
//     and rounded once to float32, every other input (zeros, negatives, infinities, NaNs) bit for
//     bit against the C library's logf;
//   - floor, ceil and trunc: every input bit for bit against the C library's floorf, ceilf and
//     truncf (signed zeros and NaNs included).
// Prints the inputs that differ and a summary line.
//
//   g++ -std=c++17 -O2 -march=native -ffp-contract=off -fno-math-errno -pthread
//       -I weft/native tools/check_math_f32.cpp -o /tmp/check_math_f32      (one command)
//   /tmp/check_math_f32 [STRIDE]     (STRIDE 1, the default, is every one of the 2^32 floats)
//
// A long double log within 2^-60 relative of a float32 rounding midpoint would make the
// reference itself unsure; those inputs are counted apart ("unsure"), and there are none.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "math_f32.h"

struct tally {
    unsigned long long checked = 0, wrong = 0, unsure = 0;
};

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void check_range(uint64_t begin, uint64_t end, uint64_t stride, tally* t) {
    for (uint64_t i = begin; i < end; i += stride) {
        const uint32_t u = uint32_t(i);
        float x;
        memcpy(&x, &u, 4);
        const uint32_t got = bits(weft::f32math::log(x));
        uint32_t want;
        if (std::isfinite(x) && x > 0.0f) {
            const long double r = logl((long double)x);
            want = bits(float(r));
            // distance to the nearest float32 midpoint, relative
            const float lo = float(r);
            const float other = std::nextafter(lo, (long double)lo < r ? INFINITY : -INFINITY);
            const long double mid = ((long double)lo + (long double)other) / 2;
            if (r != 0 && fabsl(r - mid) < fabsl(r) * 0x1p-60L) ++t->unsure;
        } else {
            want = bits(logf(x));
        }
        ++t->checked;
        if (got != want) {
            if (++t->wrong <= 20) printf("log x, x = %a (0x%08x): got 0x%08x, want 0x%08x\n", double(x), u, got, want);
        }
        const uint32_t integral[3][2] = {{bits(weft::f32math::floor(x)), bits(floorf(x))},
                                         {bits(weft::f32math::ceil(x)), bits(ceilf(x))},
                                         {bits(weft::f32math::trunc(x)), bits(truncf(x))}};
        for (int f = 0; f < 3; ++f) {
            if (integral[f][0] != integral[f][1] && ++t->wrong <= 20)
                printf("%s x, x = %a (0x%08x): got 0x%08x, want 0x%08x\n", f == 0 ? "floor" : f == 1 ? "ceil" : "trunc",
                       double(x), u, integral[f][0], integral[f][1]);
        }
    }
}

int main(int argc, char** argv) {
    const uint64_t stride = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1;
    const unsigned n = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;
    const uint64_t total = 1ull << 32;
    std::vector<tally> tallies(n);
    std::vector<std::thread> threads;
    const uint64_t per = (total / stride + n - 1) / n * stride;
    for (unsigned w = 0; w < n; ++w) {
        const uint64_t b = w * per, e = b + per < total ? b + per : total;
        threads.emplace_back(check_range, b, e, stride, &tallies[w]);
    }
    tally sum;
    for (unsigned w = 0; w < n; ++w) {
        threads[w].join();
        sum.checked += tallies[w].checked;
        sum.wrong += tallies[w].wrong;
        sum.unsure += tallies[w].unsure;
    }
    printf("checked %llu floats: %llu results differ, %llu logs where the reference is unsure\n", sum.checked, sum.wrong,
           sum.unsure);
    return sum.wrong == 0 ? 0 : 1;
}
