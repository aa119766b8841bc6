// gather_kernel.h is the C reference gather-reduce kernel, shared by the
// standalone benchmark (bench/c/gather.c) and this package's cgo harness,
// which runs it beside flowrun's Go kernel on the same memory.
//
// gather_sum_table sums every bag of one table, as FBGEMM's EmbeddingSpMDM
// reads rows: AVX2, columns in blocks of 128 floats (16 accumulators) while
// they last, then 64; while summing lookup p of the first block it
// prefetches (T0) every line of the row pf lookups ahead, across bags.
// Each output element is summed from +0 in bag order, so the result equals
// flowrun's gather-reduce bit for bit. dim must be a multiple of 64; row r
// starts at data + r*stride floats.
#ifndef FLOWRUN_GATHER_KERNEL_H
#define FLOWRUN_GATHER_KERNEL_H

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>

#define GK_ADD(i) a##i = _mm256_add_ps(a##i, _mm256_loadu_ps(r + 8 * i))
#define GK_STORE(i) _mm256_storeu_ps(o + c + 8 * i, a##i)

// GK_PREFETCH prefetches the row pf lookups after p. It is a macro, not a
// function: GCC deems a function whose only effect is __builtin_prefetch
// "const" and deletes calls to it, prefetches and all.
#define GK_PREFETCH(p)                                                             \
	do {                                                                       \
		if (pf > 0 && (p) + pf < total) {                                  \
			const char *f_ = (const char *)(data + ix[(p) + pf] * stride); \
			for (int l_ = 0; l_ < lines; l_++)                         \
				_mm_prefetch(f_ + 64 * l_, _MM_HINT_T0);           \
		}                                                                  \
	} while (0)

static void gather_sum_table(const float *data, const int64_t *ix, const int64_t *off, int batch, int dim, int64_t stride, int pf, float *out) {
	const int64_t total = off[batch];
	const int lines = (dim * 4 + 63) / 64;
	for (int b = 0; b < batch; b++) {
		float *o = out + (int64_t)b * dim;
		int c = 0;
		for (; c + 128 <= dim; c += 128) {
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
			__m256 a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0;
			for (int64_t p = off[b]; p < off[b + 1]; p++) {
				if (c == 0)
					GK_PREFETCH(p);
				const float *r = data + ix[p] * stride + c;
				GK_ADD(0); GK_ADD(1); GK_ADD(2); GK_ADD(3); GK_ADD(4); GK_ADD(5); GK_ADD(6); GK_ADD(7);
				GK_ADD(8); GK_ADD(9); GK_ADD(10); GK_ADD(11); GK_ADD(12); GK_ADD(13); GK_ADD(14); GK_ADD(15);
			}
			GK_STORE(0); GK_STORE(1); GK_STORE(2); GK_STORE(3); GK_STORE(4); GK_STORE(5); GK_STORE(6); GK_STORE(7);
			GK_STORE(8); GK_STORE(9); GK_STORE(10); GK_STORE(11); GK_STORE(12); GK_STORE(13); GK_STORE(14); GK_STORE(15);
		}
		for (; c < dim; c += 64) {
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
			for (int64_t p = off[b]; p < off[b + 1]; p++) {
				if (c == 0)
					GK_PREFETCH(p);
				const float *r = data + ix[p] * stride + c;
				GK_ADD(0); GK_ADD(1); GK_ADD(2); GK_ADD(3); GK_ADD(4); GK_ADD(5); GK_ADD(6); GK_ADD(7);
			}
			GK_STORE(0); GK_STORE(1); GK_STORE(2); GK_STORE(3); GK_STORE(4); GK_STORE(5); GK_STORE(6); GK_STORE(7);
		}
	}
}

// gather_job is a batch over tables: table t's rows at data[t], its
// indices at ix[t] and bag offsets at off[t], its output at out[t].
typedef struct {
	const float *const *data;
	const int64_t *const *ix;
	const int64_t *const *off;
	float *const *out;
	int tables, batch, dim, pf, threads;
	int64_t stride;
} gather_job;

typedef struct {
	const gather_job *job;
	int *next; // the next table to take
} gk_worker_arg;

static void *gk_worker(void *arg) {
	const gk_worker_arg *a = (const gk_worker_arg *)arg;
	const gather_job *j = a->job;
	for (;;) {
		int t = __atomic_fetch_add(a->next, 1, __ATOMIC_RELAXED);
		if (t >= j->tables)
			return 0;
		gather_sum_table(j->data[t], j->ix[t], j->off[t], j->batch, j->dim, j->stride, j->pf, j->out[t]);
	}
}

// gather_run runs a job on its threads (the calling thread and threads-1
// more), each taking the next table not yet taken, as flowrun's kernel
// hands tables to its workers.
static void gather_run(const gather_job *j) {
	pthread_t th[64];
	int next = 0;
	gk_worker_arg arg = {j, &next};
	int n = j->threads < 1 ? 1 : (j->threads > 64 ? 64 : j->threads);
	for (int w = 1; w < n; w++)
		pthread_create(&th[w], 0, gk_worker, &arg);
	gk_worker(&arg);
	for (int w = 1; w < n; w++)
		pthread_join(th[w], 0);
}

#endif
