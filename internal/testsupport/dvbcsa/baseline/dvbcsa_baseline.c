/*
 * dvbcsa_baseline: the speed baseline for tsdescramble. A single-threaded descrambler built on
 * Debian's libdvbcsa bitslice API, doing the same job as `tsdescramble -in F -out G -cw-file K`
 * on 188-byte streams: read the file in chunks of 1024 packets, gather the scrambled payloads of
 * the current key into batches of dvbcsa_bs_batch_size() (128 with Debian's SSE2 build), clear
 * the scrambling bits, write every packet out. The CW list follows the same convention: the
 * first CW for the first crypto period, the next at each change of parity, cyclically.
 *
 *   gcc -O2 -o dvbcsa_baseline dvbcsa_baseline.c -ldvbcsa
 *   ./dvbcsa_baseline scrambled.ts clear.ts keys.txt
 *
 * It is a measuring tool, not part of the build: no resync, 188-byte packets only.
 */
#include <dvbcsa/dvbcsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024
#define MAXCW 4096

static unsigned char cws[MAXCW][8];
static int ncw;

static int load_cws(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f) && ncw < MAXCW) {
		char hex[17];
		int n = 0;
		for (char *p = line; *p && *p != '#' && n < 16; p++)
			if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))
				hex[n++] = *p;
		if (n != 16)
			continue;
		hex[16] = 0;
		for (int i = 0; i < 8; i++) {
			unsigned v;
			sscanf(hex + 2 * i, "%2x", &v);
			cws[ncw][i] = v;
		}
		ncw++;
	}
	fclose(f);
	return ncw > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s in.ts out.ts cw-file\n", argv[0]);
		return 2;
	}
	if (load_cws(argv[3])) {
		fprintf(stderr, "cannot read control words from %s\n", argv[3]);
		return 2;
	}
	FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
	if (!in || !out) {
		perror("open");
		return 1;
	}
	unsigned int bs = dvbcsa_bs_batch_size();
	struct dvbcsa_bs_key_s *keys[2] = {dvbcsa_bs_key_alloc(), dvbcsa_bs_key_alloc()};
	dvbcsa_bs_key_set(cws[0], keys[0]);
	dvbcsa_bs_key_set(cws[0], keys[1]);
	struct dvbcsa_bs_batch_s *batch = calloc(bs + 1, sizeof *batch);
	unsigned char *buf = malloc(CHUNK * 188);
	int last = -1, next = 1, nb = 0;
	size_t n;
	while ((n = fread(buf, 188, CHUNK, in)) > 0) {
		for (size_t i = 0; i < n; i++) {
			unsigned char *p = buf + 188 * i;
			int tsc = p[3] >> 6;
			if (tsc < 2 || !(p[3] & 0x10))
				continue;
			int off = 4;
			if (p[3] & 0x20)
				off += 1 + p[4];
			if (off >= 188)
				continue;
			int parity = tsc & 1;
			if (parity != last) {
				if (nb) { /* flush the batch of the old key */
					batch[nb].data = NULL;
					dvbcsa_bs_decrypt(keys[last], batch, 184);
					nb = 0;
				}
				if (last >= 0) {
					dvbcsa_bs_key_set(cws[next % ncw], keys[parity]);
					next++;
				}
				last = parity;
			}
			p[3] &= 0x3f;
			batch[nb].data = p + off;
			batch[nb].len = 188 - off;
			if (++nb == bs) {
				batch[nb].data = NULL;
				dvbcsa_bs_decrypt(keys[parity], batch, 184);
				nb = 0;
			}
		}
		if (nb) {
			batch[nb].data = NULL;
			dvbcsa_bs_decrypt(keys[last], batch, 184);
			nb = 0;
		}
		if (fwrite(buf, 188, n, out) != n) {
			perror("write");
			return 1;
		}
	}
	fclose(out);
	fclose(in);
	return 0;
}
