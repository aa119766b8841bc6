// gather.c is the C reference for flowrun's gather-reduce benchmark: the
// memory limit of a random-row gather on this machine, measured the way
// FBGEMM's EmbeddingSpMDM kernel reads rows (AVX2, software prefetch of the
// rows a fixed number of lookups ahead), on the same sizes and indices
// distribution as `flowrun bench kernel --op gather-reduce`.
//
// For every table and bag it sums the bag's rows (dim float32 each) into
// out[table][bag][dim]; tables are split across threads. It prints one
// JSON line with the median GB/s (row bytes read ÷ wall time) of the
// repetitions, and gbps_cpu, the same bytes over the median CPU time per
// thread: a figure that load from other processes barely moves (a
// preempted thread's CPU clock stops), for comparing on a shared machine.
//
// Memory (--mem) is where the tables live: "shm" (a file under /dev/shm,
// MAP_SHARED, as flowrun's regions are), "anon" (private anonymous); add
// "+thp" to advise huge pages (madvise MADV_HUGEPAGE).
//
// The kernel itself is bench/cgather/gather_kernel.h, which bench/cgather runs from
// Go beside flowrun's kernel on the same memory.
//
// Build: gcc -O3 -mavx2 -pthread -o gather gather.c -lm (scripts/bench-gather-c.sh)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../cgather/gather_kernel.h"

static int tables = 8, dim = 128, batch = 2048, lookups = 20, threads = 1;
static int reps = 10, warmup = 2, pf = 12;
static long rows = 1048576;
static const char *dist = "uniform", *mem = "shm+thp";
static double zipf_s = 1.05;

static float **tab;   // [tables] -> rows*dim
static int64_t **idx; // [tables] -> batch*lookups
static int64_t *off;  // batch+1 (every table has the same bag sizes)
static float *out;    // tables*batch*dim

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t splitmix(void) {
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double last_cpu; // CPU seconds of the last run, all threads

static void *alloc(size_t bytes, int t) {
	int thp = strstr(mem, "+thp") != NULL;
	void *p;
	if (strncmp(mem, "shm", 3) == 0) {
		char name[64];
		snprintf(name, sizeof name, "/dev/shm/gather-c-%d-%d", getpid(), t);
		int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || ftruncate(fd, bytes) != 0) {
			perror(name);
			exit(1);
		}
		unlink(name);
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	} else {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	if (thp && madvise(p, bytes, MADV_HUGEPAGE) != 0)
		fprintf(stderr, "madvise: %s\n", strerror(errno));
	return p;
}

// zipf draws ranks in [0, n) with P(k) ∝ 1/(k+1)^s by inverting the
// continuous approximation of the CDF, then scatters ranks over the rows
// with a multiplicative hash so that hot rows are not adjacent.
static int64_t zipf(long n) {
	double u = (splitmix() >> 11) * 0x1.0p-53;
	double s = zipf_s, k;
	double hn = (pow((double)n, 1 - s) - 1) / (1 - s);
	k = pow(u * hn * (1 - s) + 1, 1 / (1 - s)) - 1;
	int64_t r = (int64_t)k;
	if (r < 0) r = 0;
	if (r >= n) r = n - 1;
	return (int64_t)(((uint64_t)r * 0x9e3779b97f4a7c15ull) % (uint64_t)n);
}

static gather_job job;

static double run(void) {
	double c0 = cpu_now();
	double t0 = now();
	gather_run(&job);
	double t = now() - t0;
	last_cpu = cpu_now() - c0;
	return t;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--tables")) tables = atoi(v);
		else if (!strcmp(k, "--rows")) rows = atol(v);
		else if (!strcmp(k, "--dim")) dim = atoi(v);
		else if (!strcmp(k, "--batch")) batch = atoi(v);
		else if (!strcmp(k, "--lookups")) lookups = atoi(v);
		else if (!strcmp(k, "--threads")) threads = atoi(v);
		else if (!strcmp(k, "--reps")) reps = atoi(v);
		else if (!strcmp(k, "--warmup")) warmup = atoi(v);
		else if (!strcmp(k, "--prefetch")) pf = atoi(v);
		else if (!strcmp(k, "--dist")) dist = v;
		else if (!strcmp(k, "--zipf-s")) zipf_s = atof(v);
		else if (!strcmp(k, "--mem")) mem = v;
		else if (!strcmp(k, "--seed")) rng_state = strtoull(v, NULL, 10);
		else {
			fprintf(stderr, "unknown flag %s\n", k);
			return 2;
		}
	}
	if (dim % 64 != 0 || threads < 1 || threads > 64 || reps < 1) {
		fprintf(stderr, "dim must be a multiple of 64, threads in [1, 64], reps ≥ 1\n");
		return 2;
	}
	int zipfian = !strcmp(dist, "zipf");
	tab = calloc(tables, sizeof *tab);
	idx = calloc(tables, sizeof *idx);
	off = calloc(batch + 1, sizeof *off);
	out = aligned_alloc(64, (size_t)tables * batch * dim * 4);
	for (int b = 0; b <= batch; b++)
		off[b] = (int64_t)b * lookups;
	for (int t = 0; t < tables; t++) {
		tab[t] = alloc((size_t)rows * dim * 4, t);
		for (long i = 0; i < rows * dim; i++)
			tab[t][i] = (float)(splitmix() >> 40) * 0x1.0p-24f - 0.5f;
		idx[t] = malloc((size_t)batch * lookups * 8);
		for (long i = 0; i < (long)batch * lookups; i++)
			idx[t][i] = zipfian ? zipf(rows) : (int64_t)(splitmix() % (uint64_t)rows);
	}
	const int64_t **offs = calloc(tables, sizeof *offs);
	float **outs = calloc(tables, sizeof *outs);
	for (int t = 0; t < tables; t++) {
		offs[t] = off;
		outs[t] = out + (size_t)t * batch * dim;
	}
	job = (gather_job){.data = (const float *const *)tab, .ix = (const int64_t *const *)idx, .off = offs, .out = outs,
	                   .tables = tables, .batch = batch, .dim = dim, .pf = pf, .threads = threads, .stride = dim};
	for (int i = 0; i < warmup; i++)
		run();
	double *secs = calloc(reps, sizeof *secs), *cpus = calloc(reps, sizeof *cpus);
	for (int i = 0; i < reps; i++) {
		secs[i] = run();
		cpus[i] = last_cpu;
	}
	qsort(secs, reps, sizeof *secs, cmp);
	qsort(cpus, reps, sizeof *cpus, cmp);
	double med = reps % 2 ? secs[reps / 2] : (secs[reps / 2 - 1] + secs[reps / 2]) / 2;
	double cpu = reps % 2 ? cpus[reps / 2] : (cpus[reps / 2 - 1] + cpus[reps / 2]) / 2;
	double bytes = (double)tables * batch * lookups * dim * 4;
	double check = 0;
	for (long i = 0; i < (long)tables * batch * dim; i += 97)
		check += out[i];
	printf("{\"impl\":\"c-avx2\",\"op\":\"gather-reduce\",\"mem\":\"%s\",\"dist\":\"%s\",\"tables\":%d,\"rows\":%ld,\"dim\":%d,"
	       "\"batch\":%d,\"lookups\":%d,\"threads\":%d,\"prefetch\":%d,\"reps\":%d,\"row_bytes\":%.0f,"
	       "\"seconds\":%.6f,\"seconds_min\":%.6f,\"gbps\":%.3f,\"cpu_seconds\":%.6f,\"gbps_cpu\":%.3f,\"checksum\":%.3f}\n",
	       mem, dist, tables, rows, dim, batch, lookups, threads, pf, reps, bytes, med, secs[0], bytes / med / 1e9,
	       cpu, bytes / (cpu / threads) / 1e9, check);
	return 0;
}
