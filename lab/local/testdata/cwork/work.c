/* work: a small C program for perflab's tests of real binaries.
 * work HOT COLD [SYS]: hot_loop runs HOT million iterations, cold_loop COLD
 * million, and with SYS it makes SYS thousand getppid system calls. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

volatile unsigned long sink;

__attribute__((noinline)) void hot_loop(long n) {
	unsigned long x = 1;
	for (long i = 0; i < n * 1000000L; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void cold_loop(long n) {
	unsigned long x = 3;
	for (long i = 0; i < n * 1000000L; i++)
		x ^= x << 7, x ^= x >> 9;
	sink = x;
}

int main(int argc, char **argv) {
	long hot = argc > 1 ? atol(argv[1]) : 100, cold = argc > 2 ? atol(argv[2]) : 50;
	long sys = argc > 3 ? atol(argv[3]) : 0;
	hot_loop(hot);
	cold_loop(cold);
	for (long i = 0; i < sys * 1000; i++)
		syscall(SYS_getppid);
	return 0;
}
