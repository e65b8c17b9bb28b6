// weft CPU runtime: a persistent thread pool that runs a kernel's range function over the
// launch grid, and the native radix sort of wp.utils (sort.h). Built at install time as the
// extension module weft._runtime (setup.py), or else once per machine into the kernel cache.
//
// weft_launch(fn, ctx, args, n, nthreads) splits [0, n) into contiguous chunks, one per thread;
// the calling thread runs the first chunk. Small launches run inline (no wake-up cost).
//
// Waking a sleeping thread costs tens of microseconds, more than a whole launch of 10k simple
// threads. So a worker that finished a job spins for a while (SPIN_US) watching for the next one
// before it sleeps: back-to-back launches (a simulation loop, a tape's backward pass) find it awake.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core.h"
#include "sort.h"

typedef void (*range_fn)(weft::launch_context*, const void*, weft::int64, weft::int64);

namespace {

struct Job {
    range_fn fn;
    weft::launch_context* ctx;
    const void* args;
    weft::int64 n;
    int parts;
};

class Pool {
   public:
    static constexpr int SPIN_US = 300;  // how long an idle worker watches for the next job
    static constexpr int DONE_SPIN_US = 1000;  // how long the caller watches for the workers to finish

    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1);
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
    }

    void run(const Job& job) {
        ensure_workers(job.parts - 1);
        bool sleepers;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = job;
            pending_.store(job.parts - 1);
            generation_.fetch_add(1, std::memory_order_release);
            sleepers = sleepers_ > 0;
        }
        if (sleepers) wake_.notify_all();
        run_part(job, 0);
        // Workers usually finish within microseconds of the caller: watch for up to DONE_SPIN_US,
        // then sleep. Sleeping early is costly on a virtual machine: the hypervisor deschedules a
        // halted vCPU, and waking it again can take hundreds of microseconds, paid per launch.
        // With more threads than cores, a spinning caller would hold a core a worker needs.
        bool crowded = job.parts > cores();
        spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; }, crowded ? 20 : DONE_SPIN_US, crowded);
        if (pending_.load(std::memory_order_acquire) != 0) {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [&] { return pending_.load() == 0; });
        }
    }

   private:
    static void run_part(const Job& job, int part) {
        weft::int64 begin = job.n * part / job.parts;
        weft::int64 end = job.n * (part + 1) / job.parts;
        if (begin < end) job.fn(job.ctx, job.args, begin, end);
    }

    void ensure_workers(int count) {
        if ((int)workers_.size() < count) crowded_.store(count + 1 > cores(), std::memory_order_relaxed);
        while ((int)workers_.size() < count) {
            int index = (int)workers_.size() + 1;
            unsigned long start;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                start = generation_.load();
            }
            // The worker must treat the generation current at its creation as already seen,
            // whenever its thread actually starts.
            workers_.emplace_back([this, index, start] { worker(index, start); });
        }
    }

    void worker(int index, unsigned long seen) {
        for (;;) {
            spin_for_job(seen);
            Job job;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                if (generation_.load() == seen) {
                    sleepers_++;
                    wake_.wait(lock, [&] { return generation_.load() != seen; });
                    sleepers_--;
                }
                seen = generation_.load();
                if (stop_) return;
                job = job_;
            }
            if (index < job.parts) {
                run_part(job, index);
                if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    done_.notify_all();
                }
            }
        }
    }

    // Watch the generation counter for up to SPIN_US before going to sleep.
    void spin_for_job(unsigned long seen) {
        spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, SPIN_US, crowded_);
    }

    static int cores() {
        static const int n = int(std::thread::hardware_concurrency());
        return n > 0 ? n : 1;
    }

    // Poll `done` until it holds or `limit_us` microseconds have passed.
    template <typename Done>
    static void spin_until(Done done, int limit_us, bool yield) {
        auto start = std::chrono::steady_clock::now();
        for (;;) {
            for (int k = 0; k < 256; ++k) {
                if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
            auto waited = std::chrono::steady_clock::now() - start;
            if (std::chrono::duration_cast<std::chrono::microseconds>(waited).count() > limit_us) return;
            // With more threads than cores, let a thread waiting for this core run: a spinning
            // worker would otherwise keep the launching thread from issuing the next launch.
            if (yield) std::this_thread::yield();
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::atomic<unsigned long> generation_{0};
    std::atomic<bool> crowded_{false};  // more threads (workers + caller) than cores
    int sleepers_ = 0;  // workers blocked on wake_ (guarded by mutex_)
    bool stop_ = false;
    Job job_{};
    std::atomic<int> pending_{0};
};

Pool& pool() {
    static Pool* p = new Pool();  // never destroyed: workers may outlive static destruction order
    return *p;
}

std::mutex launch_mutex;

// Chooses, per (range function, size class of the grid), between the pool and the calling thread
// alone, from the times it measures. Some launches run faster on one thread: small grids, and
// scatters whose atomics make the cores fight over cache lines (a cloth's spring forces). Each
// choice is tried in a burst of BURST launches whose first one is not counted (it pays for waking
// a sleeping worker, or for cold caches); then the faster choice (by the fastest of its last
// RECENT times; one thread must win by a margin, see margin()) is used, and the other is tried
// again in a burst now and then (explore_period), so that a change of load or data is noticed. Results do not depend
// on the choice except for the order of float additions in atomics.
class Tuner {
   public:
    static constexpr int SLOTS = 1024, BURST = 3, EXPLORE = 64, RECENT = 4;
    static constexpr double LONG = 0.005, LONG_MARGIN_AT = 100e-6;
    struct Entry {
        range_fn fn = nullptr;
        int size_class = 0;
        int samples[2] = {0, 0};       // [0]: one thread, [1]: the pool
        double estimate[2] = {0, 0};  // seconds: the fastest of the last RECENT samples
        double recent[2][4] = {};
        long launches = 0;
        int burst_choice = 0, burst_left = 0;
        long next_explore = 0;  // launch count at which the other choice is tried again
        int backoff = 0;        // pool retries in a row that lost (one thread stays best)
    };

    Entry& find(range_fn fn, int size_class) {
        size_t h = (size_t(uintptr_t(fn)) / 16 * 31 + size_t(size_class)) % SLOTS;
        for (int probe = 0; probe < SLOTS; ++probe) {
            Entry& e = entries_[(h + probe) % SLOTS];
            if (e.fn == fn && e.size_class == size_class) return e;
            if (!e.fn) return init(e, fn, size_class);
        }
        return init(entries_[h], fn, size_class);  // full: start over in the home slot
    }

    // The choice for the next launch: 1 = the pool, 0 = one thread. Launches that take longer than
    // LONG seconds on the pool are never tried on one thread (that would cost more than it could
    // save: the effects that make one thread win are fixed costs and contention).
    static int choose(Entry& e) {
        if (e.burst_left == 0) {
            int other = 1 - best(e);
            if (e.samples[1] == 0)
                start_burst(e, 1);
            else if (e.samples[0] == 0 && e.estimate[1] > LONG)
                return 1;
            else if (e.samples[0] == 0)
                start_burst(e, 0);
            else if (e.launches >= e.next_explore) {
                start_burst(e, other);
                e.next_explore = e.launches + BURST + explore_period(e);
            }
        }
        return e.burst_left > 0 ? e.burst_choice : best(e);
    }

    static void record(Entry& e, int choice, double seconds) {
        e.launches++;
        if (e.burst_left > 0 && e.burst_left-- == BURST) return;  // a burst's first launch
        // The fastest of the last few: a launch only gets slower by accident (another program
        // took the core, a worker had gone to sleep), so the minimum is the robust estimate.
        int n = e.samples[choice]++;
        e.recent[choice][n % RECENT] = seconds;
        double best_recent = seconds;
        for (int k = 0; k < RECENT && k <= n; ++k)
            best_recent = e.recent[choice][k] < best_recent ? e.recent[choice][k] : best_recent;
        e.estimate[choice] = best_recent;
    }

    static int best(const Entry& e) {
        if (e.samples[0] == 0 || e.samples[1] == 0) return e.samples[1] ? 1 : 0;
        return e.estimate[1] <= margin(e) * e.estimate[0] ? 1 : 0;  // ties go to the pool
    }
    // How much faster one thread must be. Short launches: 10 %. Launches that take more than
    // LONG_MARGIN_AT on the pool: 30 %. Fixed costs (waking a worker, the final barrier) cannot
    // make those faster on one thread; only contention can, and that costs far more than 30 %.
    // A worker core that sat idle while one thread was chosen runs slowly for a while after it
    // is woken on this VM (seen: a 750 us spring scatter took 870 us on two threads for about
    // 2 s after a module build, 400 us once the core was busy), and a 10 % margin let those
    // short retries keep the launch on one thread: the cloth forward ran 2x slower.
    static double margin(const Entry& e) { return e.estimate[1] > LONG_MARGIN_AT ? 1.3 : 1.1; }
    // Launches until the other choice is tried again, counted when a retry starts. One thread,
    // when the pool is best: every 64 launches, or every 512 when it was 1.5 times slower or
    // more. The pool, when one thread is best: soon (8 launches), since that is often a moment in
    // which the other core was busy, then twice as late after every retry that loses, up to 512
    // (a kernel the pool really slows down, like a contended scatter), or 16 for long launches.
    static long explore_period(Entry& e) {
        if (best(e) == 1) {
            e.backoff = 0;
            return e.estimate[0] >= 1.5 * e.estimate[1] ? 8L * EXPLORE : EXPLORE;
        }
        // Long launches back off to 16 at most: a retry costs them little next to the factor of
        // two that staying on one thread loses when its win was a moment of a slow worker core.
        int most = e.estimate[1] > LONG_MARGIN_AT ? 1 : 6;
        long period = 8L << (e.backoff < most ? e.backoff : most);
        e.backoff++;
        return period;
    }
    const Entry* entries() const { return entries_; }

   private:
    static void start_burst(Entry& e, int choice) {
        e.burst_choice = choice;
        e.burst_left = BURST;
    }
    static Entry& init(Entry& e, range_fn fn, int size_class) {
        e = Entry{};
        e.fn = fn;
        e.size_class = size_class;
        return e;
    }
    Entry entries_[SLOTS];
};

Tuner tuner;  // guarded by launch_mutex

int size_class(weft::int64 n) {
    int c = 0;
    while (n >>= 1) ++c;
    return c;
}

}  // namespace

WEFT_EXPORT int weft_runtime_version() { return 3; }

namespace {
// The whole launch on the calling thread (the entry points then skip atomics and copies).
void run_serial(range_fn fn, weft::launch_context* ctx, const void* args, weft::int64 n) {
    ctx->serial = 1;
    ctx->parts = 1;
    fn(ctx, args, 0, n);
}
}  // namespace

// Runs the launch; returns ctx->has_error (nonzero: a kernel error was recorded in ctx). With
// `adaptive`, a launch big enough for several threads may still run on one (see Tuner).
WEFT_EXPORT int weft_launch(range_fn fn, weft::launch_context* ctx, const void* args, weft::int64 n, int nthreads,
                            weft::int64 min_per_thread, int adaptive) {
    if (n <= 0) return ctx->has_error;
    weft::int64 parts = nthreads;
    if (min_per_thread > 0 && n / min_per_thread < parts) parts = n / min_per_thread;
    if (parts <= 1) {
        run_serial(fn, ctx, args, n);
        return ctx->has_error;
    }
    // One launch at a time uses the pool (and the tuner); a concurrent launch from another Python
    // thread waits.
    std::lock_guard<std::mutex> lock(launch_mutex);
    Tuner::Entry* entry = adaptive ? &tuner.find(fn, size_class(n)) : nullptr;
    int choice = entry ? Tuner::choose(*entry) : 1;
    auto start = std::chrono::steady_clock::now();
    if (choice == 0) {
        run_serial(fn, ctx, args, n);
    } else {
        ctx->serial = 0;  // a reused context may carry the flag from an earlier single-thread launch
        ctx->parts = int(n < parts ? n : parts);  // the shares that are not empty (run_part)
        pool().run(Job{fn, ctx, args, n, (int)parts});
    }
    if (entry)
        Tuner::record(*entry, choice, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return ctx->has_error;
}

// The tuner's state for one range function: fills out[0..5] with the size class's samples and
// estimates (one thread, pool) for the grid size n; returns 0 if the pair was never launched.
WEFT_EXPORT int weft_tuner_state(range_fn fn, weft::int64 n, double* out) {
    std::lock_guard<std::mutex> lock(launch_mutex);
    int c = size_class(n);
    for (int k = 0; k < Tuner::SLOTS; ++k) {
        const Tuner::Entry& e = tuner.entries()[k];
        if (e.fn == fn && e.size_class == c) {
            out[0] = e.samples[0];
            out[1] = e.samples[1];
            out[2] = e.estimate[0];
            out[3] = e.estimate[1];
            out[4] = double(e.launches);
            out[5] = Tuner::best(e);
            return 1;
        }
    }
    return 0;
}

// wp.utils.radix_sort_pairs of n contiguous (32-bit key, 32-bit value) pairs, in place and stable
// (sort.h; kind: 0 unsigned bits [begin_bit, end_bit), 1 signed, 2 float). Returns 0 when it
// could not allocate its scratch memory (then nothing moved).
WEFT_EXPORT int weft_radix_sort_pairs32(void* keys, void* values, weft::int64 n, int kind, int begin_bit, int end_bit) {
    return weft_sort::radix_sort_pairs32((uint32_t*)keys, (uint32_t*)values, n, kind, begin_bit, end_bit) ? 1 : 0;
}

#ifdef WEFT_PYTHON_MODULE
// The same runtime as a CPython extension module: a METH_FASTCALL call costs a fraction of a
// ctypes call with six converted arguments, which is most of a replayed launch's cost.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* py_launch(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "launch(entry, ctx, args, n, nthreads, min_per_thread, adaptive) takes 7 integers");
        return nullptr;
    }
    void* fn = PyLong_AsVoidPtr(argv[0]);
    void* ctx = PyLong_AsVoidPtr(argv[1]);
    void* args = PyLong_AsVoidPtr(argv[2]);
    long long n = PyLong_AsLongLong(argv[3]);
    long nthreads = PyLong_AsLong(argv[4]);
    long long min_per_thread = PyLong_AsLongLong(argv[5]);
    int adaptive = PyObject_IsTrue(argv[6]);
    if (adaptive < 0 || PyErr_Occurred()) return nullptr;
    if (!fn || !ctx) {
        PyErr_SetString(PyExc_ValueError, "launch: null entry point or context");
        return nullptr;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = weft_launch((range_fn)fn, (weft::launch_context*)ctx, args, n, (int)nthreads, min_per_thread, adaptive);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

static PyObject* py_tuner_state(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "tuner_state(entry, n) takes 2 integers");
        return nullptr;
    }
    void* fn = PyLong_AsVoidPtr(argv[0]);
    long long n = PyLong_AsLongLong(argv[1]);
    if (PyErr_Occurred()) return nullptr;
    double s[6];
    if (!weft_tuner_state((range_fn)fn, n, s)) Py_RETURN_NONE;
    return Py_BuildValue("(dddddd)", s[0], s[1], s[2], s[3], s[4], s[5]);
}

static PyObject* py_sort_pairs32(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 6) {
        PyErr_SetString(PyExc_TypeError, "sort_pairs32(keys, values, n, kind, begin_bit, end_bit) takes 6 integers");
        return nullptr;
    }
    void* keys = PyLong_AsVoidPtr(argv[0]);
    void* values = PyLong_AsVoidPtr(argv[1]);
    long long n = PyLong_AsLongLong(argv[2]);
    long kind = PyLong_AsLong(argv[3]), begin = PyLong_AsLong(argv[4]), end = PyLong_AsLong(argv[5]);
    if (PyErr_Occurred()) return nullptr;
    if (n > 0 && (!keys || !values)) {
        PyErr_SetString(PyExc_ValueError, "sort_pairs32: null array");
        return nullptr;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = weft_radix_sort_pairs32(keys, values, n, (int)kind, (int)begin, (int)end);
    Py_END_ALLOW_THREADS
    if (!ok) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef runtime_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))py_launch, METH_FASTCALL,
     "launch(entry, ctx, args, n, nthreads, min_per_thread, adaptive) -> has_error"},
    {"tuner_state", (PyCFunction)(void (*)(void))py_tuner_state, METH_FASTCALL,
     "tuner_state(entry, n) -> the 6 numbers weft_tuner_state fills for that entry point and grid size, or None"},
    {"sort_pairs32", (PyCFunction)(void (*)(void))py_sort_pairs32, METH_FASTCALL,
     "sort_pairs32(keys, values, n, kind, begin_bit, end_bit): stable radix sort of 32-bit pairs in place"},
    {nullptr, nullptr, 0, nullptr},
};

// Built into the kernel cache it is the module "weft_runtime_ext"; setup.py builds it at install
// time as "weft._runtime", stamped with the hash of its source (weft/runtime/runtime_source.py).
#ifndef WEFT_RUNTIME_INIT
#define WEFT_RUNTIME_INIT PyInit_weft_runtime_ext
#define WEFT_RUNTIME_NAME "weft_runtime_ext"
#endif
#ifndef WEFT_RUNTIME_SOURCE_HASH
#define WEFT_RUNTIME_SOURCE_HASH ""
#endif

static struct PyModuleDef runtime_module = {PyModuleDef_HEAD_INIT, WEFT_RUNTIME_NAME, nullptr, -1, runtime_methods};

PyMODINIT_FUNC WEFT_RUNTIME_INIT(void) {
    PyObject* m = PyModule_Create(&runtime_module);
    if (m && (PyModule_AddStringConstant(m, "source_hash", WEFT_RUNTIME_SOURCE_HASH) < 0 ||
              PyModule_AddIntConstant(m, "version", weft_runtime_version()) < 0)) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
#endif
