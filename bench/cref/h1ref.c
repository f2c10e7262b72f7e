// h1ref: the h1: hash of zip archives (Go's dirhash Hash1 over their
// entries) computed with libdeflate's decoder and OpenSSL's SHA-256, the
// C reference bench/run compares tfmirror's decoder with. It is built by
// bench/run from Debian's libdeflate-dev and libssl-dev and is never part
// of tfmirror.
//
// Usage: h1ref [-v] FILE...
//
// It prints one JSON line like bench/cmd/hashall's: {"decoder":"libdeflate",
// "files":N,"bytes":B,"seconds":S,"cpu_seconds":C,"user_seconds":U,
// "sys_seconds":Y,"workers":1}; with -v, also "h1:... FILE" per file on
// stderr. Each entry is inflated whole into memory, as libdeflate does
// (its sizes from the central directory); archives must not need ZIP64.
#include <fcntl.h>
#include <libdeflate.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
	fprintf(stderr, "h1ref: %s: %s\n", path, what);
	exit(1);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const uint8_t *p) { return p[0] | p[1] << 8; }

struct line {
	char *name;
	char text[64 + 2 + 1];
};

static int by_name(const void *a, const void *b) {
	return strcmp(((const struct line *)a)->name, ((const struct line *)b)->name);
}

static void hex(const uint8_t *sum, char *out) {
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = digits[sum[i] >> 4];
		out[2 * i + 1] = digits[sum[i] & 15];
	}
	out[64] = 0;
}

// h1 computes the h1: of the zip at path into out ("h1:" and base64).
static long long h1(const char *path, struct libdeflate_decompressor *d, char *out) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) die("cannot open", path);
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < 22) die("not a zip", path);
	size_t size = st.st_size;
	const uint8_t *z = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (z == MAP_FAILED) die("cannot map", path);
	close(fd);
	size_t eocd = size - 22;
	while (le32(z + eocd) != 0x06054b50) {
		if (eocd == 0 || size - eocd > 65557) die("no end of central directory", path);
		eocd--;
	}
	size_t count = le16(z + eocd + 10), cd = le32(z + eocd + 16);
	struct line *lines = calloc(count, sizeof *lines);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t sum[32];
	for (size_t i = 0; i < count; i++) {
		const uint8_t *c = z + cd;
		if (cd + 46 > size || le32(c) != 0x02014b50) die("bad central directory", path);
		uint16_t method = le16(c + 10);
		size_t csize = le32(c + 20), usize = le32(c + 24);
		size_t nlen = le16(c + 28), elen = le16(c + 30), klen = le16(c + 32);
		size_t local = le32(c + 42);
		lines[i].name = strndup((const char *)c + 46, nlen);
		cd += 46 + nlen + elen + klen;
		const uint8_t *l = z + local;
		const uint8_t *data = l + 30 + le16(l + 26) + le16(l + 28);
		if (data + csize > z + size) die("entry out of the file", path);
		uint8_t *buf = NULL;
		const uint8_t *content = data;
		if (method == 8) {
			buf = malloc(usize ? usize : 1);
			size_t got;
			if (libdeflate_deflate_decompress(d, data, csize, buf, usize, &got) != LIBDEFLATE_SUCCESS || got != usize)
				die("inflate failed", path);
			content = buf;
		} else if (method != 0 || csize != usize) {
			die("unsupported entry", path);
		}
		EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		EVP_DigestUpdate(ctx, content, usize);
		EVP_DigestFinal_ex(ctx, sum, NULL);
		free(buf);
		hex(sum, lines[i].text);
	}
	qsort(lines, count, sizeof *lines, by_name);
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (size_t i = 0; i < count; i++) {
		EVP_DigestUpdate(ctx, lines[i].text, 64);
		EVP_DigestUpdate(ctx, "  ", 2);
		EVP_DigestUpdate(ctx, lines[i].name, strlen(lines[i].name));
		EVP_DigestUpdate(ctx, "\n", 1);
		free(lines[i].name);
	}
	EVP_DigestFinal_ex(ctx, sum, NULL);
	EVP_MD_CTX_free(ctx);
	free(lines);
	munmap((void *)z, size);
	strcpy(out, "h1:");
	EVP_EncodeBlock((unsigned char *)out + 3, sum, 32);
	return (long long)size;
}

static double secs(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(int argc, char **argv) {
	int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long long total = 0;
	int files = 0;
	char out[64];
	for (int i = 1 + verbose; i < argc; i++, files++) {
		total += h1(argv[i], d, out);
		if (verbose) fprintf(stderr, "%s %s\n", out, argv[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double user = secs(ru.ru_utime), sys = secs(ru.ru_stime);
	printf("{\"decoder\":\"libdeflate\",\"files\":%d,\"bytes\":%lld,\"seconds\":%.3f,\"cpu_seconds\":%.3f,"
	       "\"user_seconds\":%.3f,\"sys_seconds\":%.3f,\"workers\":1}\n",
	       files, total, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, user + sys, user, sys);
	libdeflate_free_decompressor(d);
	return 0;
}
