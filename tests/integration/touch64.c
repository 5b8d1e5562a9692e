/* Touch every 4 KiB page of a fresh 64 MiB anonymous buffer once; print the pid. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	size_t size = 64UL << 20;
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < size; i += 4096)
		p[i] = 1;
	printf("%d\n", (int)getpid());
	return 0;
}
