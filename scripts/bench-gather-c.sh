#!/usr/bin/env bash
# The C reference for `flowrun bench kernel --op gather-reduce`: builds
# bench/c/gather.c (gcc -O3 -mavx2) into bin/ and runs it with the given
# flags, which are the bench's own (--tables --rows --dim --batch --lookups
# --dist --threads --reps --warmup), plus --prefetch N (lookups ahead) and
# --mem shm|shm+thp|anon|anon+thp (where the tables live; the default,
# shm+thp, is what flowrun's regions are: /dev/shm files with huge-page
# advice). Prints one JSON line with the median GB/s.
#
#   scripts/bench-gather-c.sh --threads 2
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
if [ ! -x bin/gather-c ] || [ bench/c/gather.c -nt bin/gather-c ] || [ bench/cgather/gather_kernel.h -nt bin/gather-c ]; then
	gcc -O3 -mavx2 -pthread -o bin/gather-c bench/c/gather.c -lm
fi
exec bin/gather-c "$@"
