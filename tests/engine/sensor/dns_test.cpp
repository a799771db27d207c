#include "engine/sensor/dns.h"

#include <vector>

#include <gtest/gtest.h>

namespace vigil::sensor {
namespace {

std::vector<std::uint8_t> query(const std::vector<std::string>& labels, std::uint16_t qtype) {
  std::vector<std::uint8_t> m = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (const auto& l : labels) {
    m.push_back(static_cast<std::uint8_t>(l.size()));
    m.insert(m.end(), l.begin(), l.end());
  }
  m.push_back(0);
  m.push_back(qtype >> 8);
  m.push_back(qtype & 0xff);
  m.push_back(0);
  m.push_back(1);
  return m;
}

TEST(Dns, Question) {
  auto r = parse_dns(query({"Pool", "SupportXMR", "com"}, 1));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->is_response);
  EXPECT_EQ(r->id, 0x1234);
  EXPECT_EQ(r->name, "pool.supportxmr.com");
  EXPECT_EQ(r->qtype, 1);
}

TEST(Dns, AnswerWithCompressionAndBothFamilies) {
  auto m = query({"huggingface", "co"}, 1);
  m[2] = 0x81;  // QR + RD
  m[3] = 0x80;  // RA, rcode 0
  m[7] = 3;     // three answers
  // A 1.2.3.4 (name = pointer to 12)
  std::vector<std::uint8_t> a = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4};
  // CNAME (ignored)
  std::vector<std::uint8_t> cn = {0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xC0, 12};
  // AAAA 2001:db8::1
  std::vector<std::uint8_t> aaaa = {0xC0, 12,   0, 28, 0, 1, 0, 0, 0, 60, 0, 16, 0x20, 0x01,
                                    0x0d, 0xb8, 0, 0,  0, 0, 0, 0, 0, 0,  0, 0,  0,    1};
  m.insert(m.end(), a.begin(), a.end());
  m.insert(m.end(), cn.begin(), cn.end());
  m.insert(m.end(), aaaa.begin(), aaaa.end());
  auto r = parse_dns(m);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->is_response);
  EXPECT_EQ(r->name, "huggingface.co");
  ASSERT_EQ(r->answers.size(), 2u);
  EXPECT_EQ(event::to_string(r->answers[0]), "1.2.3.4");
  EXPECT_EQ(event::to_string(r->answers[1]), "2001:db8::1");
}

TEST(Dns, NxdomainRcode) {
  auto m = query({"nope", "example"}, 28);
  m[2] = 0x81;
  m[3] = 0x83;
  auto r = parse_dns(m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rcode, 3);
  EXPECT_EQ(r->qtype, 28);
  EXPECT_TRUE(r->answers.empty());
}

TEST(Dns, HostileMessagesAreRejectedNotOverread) {
  EXPECT_FALSE(parse_dns(std::vector<std::uint8_t>{1, 2, 3}));
  // pointer loop in the question name
  std::vector<std::uint8_t> loop = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1};
  EXPECT_FALSE(parse_dns(loop));
  // forward pointer
  std::vector<std::uint8_t> fwd = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 40, 0, 1, 0, 1};
  EXPECT_FALSE(parse_dns(fwd));
  // label longer than the message
  std::vector<std::uint8_t> lab = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 60, 'a', 'b'};
  EXPECT_FALSE(parse_dns(lab));
  // no question
  std::vector<std::uint8_t> noq = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(parse_dns(noq));
  // answer claiming more rdata than present: the question is kept, no answer
  auto m = query({"a", "b"}, 1);
  m[2] = 0x81;
  m[7] = 1;
  std::vector<std::uint8_t> a = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 200, 1, 2};
  m.insert(m.end(), a.begin(), a.end());
  auto r = parse_dns(m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "a.b");
  EXPECT_TRUE(r->answers.empty());
}

TEST(Dns, AnswersAreBounded) {
  auto m = query({"x", "y"}, 1);
  m[2] = 0x81;
  m[6] = 0;
  m[7] = 100;
  for (int i = 0; i < 100; ++i) {
    std::vector<std::uint8_t> a = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, static_cast<std::uint8_t>(i)};
    m.insert(m.end(), a.begin(), a.end());
  }
  auto r = parse_dns(m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->answers.size(), kDnsMaxAnswers);
}

}  // namespace
}  // namespace vigil::sensor
