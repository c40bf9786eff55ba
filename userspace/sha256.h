/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-256 (FIPS 180-4), small and dependency free, for "krdmactl copy".
 */
#ifndef KRDMACTL_SHA256_H
#define KRDMACTL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256_ctx {
	uint32_t state[8];
	uint64_t bytes;
	uint8_t block[64];
	unsigned int fill;
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t digest[SHA256_DIGEST_SIZE]);
/* 65 bytes: 64 lowercase hex digits and a NUL */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char *hex);

#endif /* KRDMACTL_SHA256_H */
