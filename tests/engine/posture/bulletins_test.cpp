#include "engine/posture/bulletins.h"

#include <gtest/gtest.h>

#include <set>

namespace vigil::posture {
namespace {

std::vector<std::string> cves(std::string_view component, std::string_view version) {
  std::vector<std::string> out;
  for (const Finding& f : vulnerable_to(component, version)) out.push_back(f.cve);
  return out;
}

TEST(Bulletins, CompareVersionsNumberByNumber) {
  EXPECT_EQ(compare_versions("1.17.8", "1.17.8"), 0);
  EXPECT_EQ(compare_versions("1.17.7", "1.17.8"), -1);
  EXPECT_EQ(compare_versions("1.17.10", "1.17.8"), 1);  // not a string comparison
  EXPECT_EQ(compare_versions("460.32.03", "460.106"), -1);
  EXPECT_EQ(compare_versions("1.17", "1.17.0"), 0);  // a missing number is 0
  EXPECT_EQ(compare_versions("390.141", "390.141.0.0"), 0);
}

TEST(Bulletins, CompareVersionsRefusesWhatIsNotAVersion) {
  for (std::string_view bad :
       {"", ".", "1.", ".1", "1..2", "1.17.8-1", "v1.17", "1.2.3.4.5.6.7.8.9", "1234567890.1", "1.17 ", "abc"}) {
    EXPECT_FALSE(compare_versions(bad, "1.0").has_value()) << bad;
  }
}

TEST(Bulletins, TableRowsAreWellFormed) {
  std::set<std::string_view> required = {"CVE-2024-0132",  "CVE-2025-23359", "CVE-2025-23266",
                                         "CVE-2025-23267", "CVE-2026-24260", "CVE-2021-1056"};
  for (const Bulletin& b : bulletins()) {
    EXPECT_GT(b.bulletin, 0) << b.cve;
    EXPECT_EQ(b.cve.rfind("CVE-", 0), 0u) << b.cve;
    EXPECT_TRUE(b.component == "driver" || b.component == "toolkit") << b.cve;
    EXPECT_TRUE(compare_versions(b.first_fixed, b.first_fixed).has_value()) << b.cve << " " << b.first_fixed;
    EXPECT_EQ(b.source.rfind("https://", 0), 0u) << b.cve;
    if (b.component == "driver") {
      EXPECT_FALSE(b.branch.empty()) << b.cve;
      EXPECT_EQ(b.first_fixed.substr(0, b.first_fixed.find('.')), b.branch) << b.cve;
    }
    required.erase(b.cve);
  }
  EXPECT_TRUE(required.empty()) << "missing from the table: " << *required.begin();
}

TEST(Bulletins, ToolkitVersionsAgainstTheFirstFixed) {
  EXPECT_EQ(cves("toolkit", "1.16.1"),
            (std::vector<std::string>{"CVE-2024-0132", "CVE-2024-0133", "CVE-2025-23359", "CVE-2025-23266",
                                      "CVE-2025-23267", "CVE-2026-24260"}));
  EXPECT_EQ(cves("toolkit", "1.17.3"),
            (std::vector<std::string>{"CVE-2025-23359", "CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"}));
  EXPECT_EQ(cves("toolkit", "1.17.7"),
            (std::vector<std::string>{"CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"}));
  EXPECT_EQ(cves("toolkit", "1.17.8"), (std::vector<std::string>{"CVE-2026-24260"}));
  EXPECT_EQ(cves("toolkit", "1.19.0"), (std::vector<std::string>{"CVE-2026-24260"}));
  EXPECT_TRUE(cves("toolkit", "1.19.1").empty());
  EXPECT_TRUE(cves("toolkit", "2.0").empty());
}

TEST(Bulletins, DriverBranchesAgainstTheirOwnRows) {
  EXPECT_EQ(cves("driver", "460.27.04"), (std::vector<std::string>{"CVE-2021-1056"}));
  EXPECT_TRUE(cves("driver", "460.32.03").empty());
  EXPECT_EQ(cves("driver", "450.80.02"), (std::vector<std::string>{"CVE-2021-1056"}));
  EXPECT_TRUE(cves("driver", "450.102.04").empty());
  EXPECT_EQ(cves("driver", "390.138"), (std::vector<std::string>{"CVE-2021-1056"}));
  // A branch the bulletin does not list: older than a fixed one got no fix,
  // newer than every listed one came after it.
  EXPECT_EQ(cves("driver", "440.118.02"), (std::vector<std::string>{"CVE-2021-1056"}));
  EXPECT_TRUE(cves("driver", "580.95.05").empty());
  EXPECT_TRUE(cves("driver", "470.42.01").empty());
}

TEST(Bulletins, UnknownOrHostileVersionsFindNothing) {
  for (std::string_view v : {"", "unknown", "1.17.8-1", "460.27.04\n", "99999999999.1", "../../etc"}) {
    EXPECT_TRUE(cves("toolkit", v).empty()) << v;
    EXPECT_TRUE(cves("driver", v).empty()) << v;
  }
  EXPECT_TRUE(cves("kernel", "1.0").empty());
}

TEST(Bulletins, FindingsNameTheFixForTheBranch) {
  auto f = vulnerable_to("driver", "418.100");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].first_fixed, "418.181.07");
  EXPECT_EQ(f[0].bulletin, 5142);
  auto none = vulnerable_to("driver", "440.1");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].first_fixed, "");  // that branch got no fix
}

}  // namespace
}  // namespace vigil::posture
