// sgemm_openblas times OpenBLAS's cblas_sgemm on the products of DLRM's
// layers, the same list and names as sdk/model/gemm's BenchmarkDLRM, and
// prints one line per product: name and GFLOP/s. Build and run through
// gemm.sh (gcc, libopenblas-dev).
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// clock is CLOCK_MONOTONIC, or with FLOWRUN_CPU_TIME=1 in the environment
// the calling thread's CPU time: on a machine shared with other jobs a
// one-thread product's CPU time is its own work, where wall time is mostly
// the scheduler's share.
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
	struct timespec t;
	clock_gettime(clock_id, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *fill(long n) {
	float *x = malloc(n * sizeof *x);
	for (long i = 0; i < n; i++) x[i] = (float)rand() / RAND_MAX * 2 - 1;
	return x;
}

// run times one product for at least min_s seconds and prints its rate.
static void run(const char *model, int in, int out, const char *prod, int ta, int tb, int m, int n, int k, double min_s) {
	int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	float *a = fill((long)ar * ac), *b = fill((long)br * bc), *c = calloc((long)m * n, sizeof(float));
	double flops = 2.0 * m * n * k, t0 = now(), t;
	long iters = 0;
	do {
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
			m, n, k, 1, a, ac, b, bc, 0, c, n);
		iters++;
		t = now() - t0;
	} while (t < min_s);
	printf("%s/%d-%d/%s/m%d_n%d_k%d %.2f\n", model, in, out, prod, m, n, k, flops * iters / t / 1e9);
	free(a), free(b), free(c);
}

static void layers(const char *model, int rows, const int *w, int nw, double min_s) {
	for (int i = 1; i < nw; i++) {
		int in = w[i - 1], out = w[i];
		run(model, in, out, "fwd", 0, 1, rows, out, in, min_s);
		run(model, in, out, "dW", 1, 0, out, in, rows, min_s);
		run(model, in, out, "dx", 0, 0, rows, in, out, min_s);
	}
}

int main(int argc, char **argv) {
	double min_s = argc > 1 ? atof(argv[1]) : 0.3;
	const char *cpu = getenv("FLOWRUN_CPU_TIME");
	if (cpu && strcmp(cpu, "1") == 0) clock_id = CLOCK_THREAD_CPUTIME_ID;
	const int sb[] = {13, 64, 32, 16}, st[] = {52, 128, 128, 64, 32, 1};
	const int pb[] = {13, 512, 256, 128}, pt[] = {164, 1024, 1024, 512, 256, 1};
	layers("small-bot", 512, sb, 4, min_s);
	layers("small-top", 512, st, 6, min_s);
	layers("scratchpipe-bot", 2048, pb, 4, min_s);
	layers("scratchpipe-top", 2048, pt, 6, min_s);
	return 0;
}
