// HMAC-SHA256 (support/sha256.h) against the test vectors of RFC 4231, section 4.
#include <gtest/gtest.h>

#include <string>

#include "support/sha256.h"

namespace tl {
namespace {

std::string bytes(int from, int to) {  // from, from + 1, ..., to
  std::string out;
  for (int b = from; b <= to; ++b) out += char(b);
  return out;
}

TEST(HmacSha256, Rfc4231Vectors) {
  ASSERT_TRUE(sha256_hex("")) << "libcrypto is needed for sha256";
  EXPECT_EQ(*hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(*hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(*hmac_sha256_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(*hmac_sha256_hex(bytes(0x01, 0x19), std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Test case 5 compares the first 128 bits only.
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0c'), "Test With Truncation")->substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  // Keys longer than the 64-byte block are hashed first.
  EXPECT_EQ(*hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(*hmac_sha256_hex(std::string(131, '\xaa'),
                             "This is a test using a larger than block-size key and a larger than block-size data. "
                             "The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, KeyAndDataBothMatter) {
  EXPECT_NE(*hmac_sha256_hex("secret one", "data"), *hmac_sha256_hex("secret two", "data"));
  EXPECT_NE(*hmac_sha256_hex("secret one", "data"), *hmac_sha256_hex("secret one", "datA"));
  EXPECT_EQ(*hmac_sha256_hex("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

}  // namespace
}  // namespace tl
