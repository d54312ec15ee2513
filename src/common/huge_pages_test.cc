// HugePageTunables: when the simulator's entry points re-execute with glibc's huge-page tunable.
#include "common/huge_pages.h"

#include "gtest/gtest.h"

namespace sluice::common {
namespace {

constexpr std::string_view kMadvise = "always [madvise] never\n";

TEST(HugePagesTest, AddsTheTunableWhenTheKernelOffersHugePages) {
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, kMadvise), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, "[always] madvise never\n"),
            "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, "1", kMadvise), "glibc.malloc.hugetlb=1");
}

TEST(HugePagesTest, KeepsOtherTunables) {
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=2", nullptr, kMadvise),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
}

TEST(HugePagesTest, NoReexecWhenSetOptedOutOrUnavailable) {
  // Already set (also after the re-exec itself: no loop), in any value.
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=0", nullptr, kMadvise), std::nullopt);
  EXPECT_EQ(HugePageTunables("a=1:glibc.malloc.hugetlb=1", nullptr, kMadvise), std::nullopt);
  EXPECT_EQ(HugePageTunables(nullptr, "0", kMadvise), std::nullopt);  // SLUICE_HUGE_PAGES=0
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, "always madvise [never]\n"), std::nullopt);
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, ""), std::nullopt);  // no THP on this kernel
}

}  // namespace
}  // namespace sluice::common
