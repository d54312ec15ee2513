// LoadFile: a file lands byte for byte in the store; bad paths and capacity errors are clear
// and leave nothing half-loaded.
#include "runtime/paramstore/file_loader.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

std::string WriteTemp(const std::string& bytes) {
  char path[] = "/tmp/sluice-paramstore-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

std::unique_ptr<ParamStore> MakeStore(int64_t capacity) {
  ParamStoreOptions o;
  o.capacity_bytes = capacity;
  return std::move(ParamStore::Create(o)).value();
}

TEST(FileLoaderTest, LoadsExactBytesWithManyThreads) {
  std::string data(5 * (1 << 20) + 123, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  const std::string path = WriteTemp(data);
  auto store = MakeStore(int64_t{64} << 20);
  LoadOptions o;
  o.threads = 3;
  o.read_bytes = 1 << 16;
  auto r = LoadFile(*store, "m", path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, static_cast<int64_t>(data.size()));
  auto l = store->Acquire("m");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(std::string((*l)->data(), static_cast<size_t>((*l)->size())), data);
  unlink(path.c_str());
}

TEST(FileLoaderTest, BadInputIsClearAndLeavesNothing) {
  auto store = MakeStore(int64_t{4} << 20);
  absl::Status s = LoadFile(*store, "m", "/nonexistent/file.bin").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("path"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(LoadFile(*store, "m", "/tmp").status()));
  const std::string path = WriteTemp(std::string(4 << 20, 'z'));  // > 85 % of 4 MiB
  s = LoadFile(*store, "m", path).status();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  LoadOptions bad;
  bad.threads = 0;
  EXPECT_NE(LoadFile(*store, "m", path, bad).status().message().find("threads"),
            std::string::npos);
  EXPECT_TRUE(store->List().empty());
  unlink(path.c_str());
}

}  // namespace
}  // namespace sluice::runtime
