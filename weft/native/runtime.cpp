// weft CPU runtime: a persistent thread pool that runs a kernel's range function over the
// launch grid. Built once per machine into the kernel cache and loaded with ctypes.
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
        // Workers usually finish within microseconds of the caller: spin briefly, then sleep.
        for (int spin = 0; spin < 20000 && pending_.load(std::memory_order_acquire) != 0; ++spin) {
        }
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
        auto start = std::chrono::steady_clock::now();
        for (;;) {
            for (int k = 0; k < 256; ++k) {
                if (generation_.load(std::memory_order_acquire) != seen) return;
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
            auto waited = std::chrono::steady_clock::now() - start;
            if (std::chrono::duration_cast<std::chrono::microseconds>(waited).count() > SPIN_US) return;
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::atomic<unsigned long> generation_{0};
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

}  // namespace

WEFT_EXPORT int weft_runtime_version() { return 1; }

// Runs the launch; returns ctx->has_error (nonzero: a kernel error was recorded in ctx).
WEFT_EXPORT int weft_launch(range_fn fn, weft::launch_context* ctx, const void* args, weft::int64 n, int nthreads,
                            weft::int64 min_per_thread) {
    if (n <= 0) return ctx->has_error;
    weft::int64 parts = nthreads;
    if (min_per_thread > 0 && n / min_per_thread < parts) parts = n / min_per_thread;
    if (parts <= 1) {
        ctx->serial = 1;
        fn(ctx, args, 0, n);
        return ctx->has_error;
    }
    ctx->serial = 0;  // a reused context may carry the flag from an earlier single-thread launch
    // One launch at a time uses the pool; a concurrent launch from another Python thread waits.
    std::lock_guard<std::mutex> lock(launch_mutex);
    pool().run(Job{fn, ctx, args, n, (int)parts});
    return ctx->has_error;
}

#ifdef WEFT_PYTHON_MODULE
// The same runtime as a CPython extension module: a METH_FASTCALL call costs a fraction of a
// ctypes call with six converted arguments, which is most of a replayed launch's cost.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* py_launch(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 6) {
        PyErr_SetString(PyExc_TypeError, "launch(entry, ctx, args, n, nthreads, min_per_thread) takes 6 integers");
        return nullptr;
    }
    void* fn = PyLong_AsVoidPtr(argv[0]);
    void* ctx = PyLong_AsVoidPtr(argv[1]);
    void* args = PyLong_AsVoidPtr(argv[2]);
    long long n = PyLong_AsLongLong(argv[3]);
    long nthreads = PyLong_AsLong(argv[4]);
    long long min_per_thread = PyLong_AsLongLong(argv[5]);
    if (PyErr_Occurred()) return nullptr;
    if (!fn || !ctx) {
        PyErr_SetString(PyExc_ValueError, "launch: null entry point or context");
        return nullptr;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = weft_launch((range_fn)fn, (weft::launch_context*)ctx, args, n, (int)nthreads, min_per_thread);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

static PyMethodDef runtime_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))py_launch, METH_FASTCALL,
     "launch(entry, ctx, args, n, nthreads, min_per_thread) -> has_error"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef runtime_module = {PyModuleDef_HEAD_INIT, "weft_runtime_ext", nullptr, -1, runtime_methods};

PyMODINIT_FUNC PyInit_weft_runtime_ext(void) { return PyModule_Create(&runtime_module); }
#endif
