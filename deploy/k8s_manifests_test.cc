// The Kubernetes manifests of deploy/k8s against the code they run: every `--flag` a sluice
// container passes exists in `sluice <daemon> --help` (or in k8s/pending-flags.txt, which fails
// once the flag exists), `--port` equals a containerPort, probes and Services name real
// container ports of the pods they select, every $(VAR) is defined, every SLUICE_* variable is
// read by the sources or used in args, and the shape issue 12 asks for (2 controller replicas
// on etcd, gateway replicas, an agent DaemonSet on GPU nodes with shared memory and the
// interception library).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace {

namespace fs = std::filesystem;

struct Object {
  std::string file;
  YAML::Node node;
  std::string kind() const { return node["kind"].as<std::string>(""); }
  std::string name() const { return node["metadata"]["name"].as<std::string>(""); }
  std::string where() const { return file + ": " + kind() + "/" + name(); }
};

std::vector<Object> LoadAll() {
  std::vector<Object> all;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(SLUICE_DEPLOY_DIR) / "k8s")) {
    if (e.path().extension() == ".yaml")
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(f.string())) {
      if (doc.IsMap())
        all.push_back({f.filename().string(), doc});
    }
  }
  return all;
}

const std::vector<Object>& Objects() {
  static const std::vector<Object> all = LoadAll();
  return all;
}

const Object* Find(const std::string& kind, const std::string& name) {
  for (const Object& o : Objects()) {
    if (o.kind() == kind && o.name() == name)
      return &o;
  }
  return nullptr;
}

bool IsWorkload(const Object& o) {
  return o.kind() == "Deployment" || o.kind() == "StatefulSet" || o.kind() == "DaemonSet";
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  if (list && list.IsSequence()) {
    for (const YAML::Node& n : list)
      out.push_back(n.as<std::string>());
  }
  return out;
}

// The ConfigMap keys every container gets through envFrom, by ConfigMap name.
std::map<std::string, std::string> ConfigMapData(const std::string& name) {
  std::map<std::string, std::string> data;
  if (const Object* cm = Find("ConfigMap", name); cm != nullptr) {
    for (const auto& kv : cm->node["data"])
      data[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return data;
}

// The container's environment: env names (value "" when from a fieldRef) and envFrom maps.
std::map<std::string, std::string> EnvOf(const YAML::Node& c) {
  std::map<std::string, std::string> env;
  for (const YAML::Node& from : c["envFrom"]) {
    if (from["configMapRef"]) {
      const std::string cm = from["configMapRef"]["name"].as<std::string>();
      EXPECT_NE(Find("ConfigMap", cm), nullptr) << "envFrom names a missing ConfigMap " << cm;
      for (const auto& [k, v] : ConfigMapData(cm))
        env[k] = v;
    }
  }
  for (const YAML::Node& e : c["env"])
    env[e["name"].as<std::string>()] = e["value"].as<std::string>("");
  return env;
}

// $(VAR) expanded as the kubelet does.
std::string Expand(const std::string& s, const std::map<std::string, std::string>& env) {
  static const std::regex var(R"(\$\(([A-Za-z_][A-Za-z0-9_]*)\))");
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), var);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += s.substr(last, it->position() - last);
    auto v = env.find((*it)[1]);
    out += v != env.end() ? v->second : it->str();
    last = it->position() + it->length();
  }
  return out + s.substr(last);
}

struct Container {
  const Object* owner;
  YAML::Node node;
  std::string where() const {
    return owner->where() + " container " + node["name"].as<std::string>("");
  }
};

std::vector<Container> Containers() {
  std::vector<Container> out;
  for (const Object& o : Objects()) {
    if (!IsWorkload(o))
      continue;
    for (const YAML::Node& c : o.node["spec"]["template"]["spec"]["containers"])
      out.push_back({&o, c});
  }
  return out;
}

std::string RunHelp(const std::string& daemon) {
  const std::string cmd = absl::StrCat(SLUICE_BINARY, " ", daemon, " --help 2>&1");
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    out.append(buf, n);
  pclose(p);
  return out;
}

std::set<std::string> FlagsOf(const std::string& daemon) {
  static std::map<std::string, std::set<std::string>> cache;
  if (!cache.contains(daemon)) {
    const std::string help = RunHelp(daemon);
    static const std::regex flag(R"(--[a-z0-9][a-z0-9-]*)");
    std::set<std::string>& flags = cache[daemon];
    for (auto it = std::sregex_iterator(help.begin(), help.end(), flag);
         it != std::sregex_iterator(); ++it) {
      flags.insert(it->str());
    }
  }
  return cache[daemon];
}

// daemon -> flags from k8s/pending-flags.txt.
std::map<std::string, std::set<std::string>> PendingFlags() {
  std::map<std::string, std::set<std::string>> pending;
  std::ifstream in(fs::path(SLUICE_DEPLOY_DIR) / "k8s" / "pending-flags.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (parts.size() >= 2)
      pending[parts[0]].insert(parts[1]);
  }
  return pending;
}

bool IsSluice(const YAML::Node& c) {
  const std::vector<std::string> cmd = Strings(c["command"]);
  return !cmd.empty() && fs::path(cmd[0]).filename() == "sluice";
}

TEST(K8sManifestsTest, EverySluiceFlagExists) {
  const auto pending = PendingFlags();
  int checked = 0;
  for (const Container& c : Containers()) {
    if (!IsSluice(c.node))
      continue;
    const std::vector<std::string> args = Strings(c.node["args"]);
    ASSERT_FALSE(args.empty()) << c.where();
    const std::string& daemon = args[0];
    const std::set<std::string> flags = FlagsOf(daemon);
    ASSERT_TRUE(flags.contains("--port")) << c.where() << ": `sluice " << daemon
                                          << " --help` lists no --port";
    for (size_t i = 1; i < args.size(); ++i) {
      if (!absl::StartsWith(args[i], "--"))
        continue;
      const std::string flag = args[i].substr(0, args[i].find('='));
      const bool known = flags.contains(flag);
      const bool awaited = pending.contains(daemon) && pending.at(daemon).contains(flag);
      EXPECT_TRUE(known || awaited) << c.where() << ": `sluice " << daemon << "` has no " << flag;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
  for (const auto& [daemon, flags] : pending) {
    for (const std::string& f : flags) {
      EXPECT_FALSE(FlagsOf(daemon).contains(f))
          << "sluice " << daemon << " now has " << f << ": remove it from k8s/pending-flags.txt";
    }
  }
}

// The container's ports by name and number.
std::map<std::string, int> PortsOf(const YAML::Node& c) {
  std::map<std::string, int> ports;
  for (const YAML::Node& p : c["ports"])
    ports[p["name"].as<std::string>(absl::StrCat(p["containerPort"].as<int>()))] =
        p["containerPort"].as<int>();
  return ports;
}

bool HasPort(const std::map<std::string, int>& ports, const YAML::Node& ref) {
  const std::string s = ref.as<std::string>();
  if (ports.contains(s))
    return true;
  for (const auto& [name, number] : ports) {
    if (absl::StrCat(number) == s)
      return true;
  }
  return false;
}

TEST(K8sManifestsTest, PortsAndProbesAgree) {
  for (const Container& c : Containers()) {
    const std::map<std::string, int> ports = PortsOf(c.node);
    EXPECT_FALSE(ports.empty()) << c.where();
    const std::vector<std::string> args = Strings(c.node["args"]);
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (IsSluice(c.node) && args[i] == "--port") {
        EXPECT_TRUE(HasPort(ports, YAML::Node(args[i + 1])))
            << c.where() << ": --port " << args[i + 1] << " is no containerPort";
      }
    }
    for (const char* probe : {"livenessProbe", "readinessProbe"}) {
      if (const YAML::Node p = c.node[probe]; p && p["httpGet"]) {
        EXPECT_TRUE(HasPort(ports, p["httpGet"]["port"]))
            << c.where() << ": " << probe << " port " << p["httpGet"]["port"].as<std::string>();
      }
    }
  }
}

TEST(K8sManifestsTest, ServicesSelectPodsAndTheirPorts) {
  int services = 0;
  for (const Object& s : Objects()) {
    if (s.kind() != "Service")
      continue;
    ++services;
    const YAML::Node selector = s.node["spec"]["selector"];
    std::vector<const Container*> selected;
    const std::vector<Container> all = Containers();
    for (const Container& c : all) {
      const YAML::Node labels = c.owner->node["spec"]["template"]["metadata"]["labels"];
      bool match = c.owner->node["metadata"]["namespace"].as<std::string>("") ==
                   s.node["metadata"]["namespace"].as<std::string>("");
      for (const auto& kv : selector)
        match = match && labels[kv.first.as<std::string>()].as<std::string>("") ==
                             kv.second.as<std::string>();
      if (match) {
        for (const YAML::Node& p : s.node["spec"]["ports"]) {
          EXPECT_TRUE(HasPort(PortsOf(c.node), p["targetPort"]))
              << s.where() << ": targetPort " << p["targetPort"].as<std::string>()
              << " is not a port of " << c.where();
        }
        selected.push_back(&c);
      }
    }
    EXPECT_FALSE(selected.empty()) << s.where() << " selects no pod";
  }
  EXPECT_GE(services, 3);
}

// Whether some file under src/ mentions "name" as a string literal (reads the variable).
bool SourcesRead(const std::string& name) {
  const std::string needle = absl::StrCat("\"", name, "\"");
  for (const auto& e : fs::recursive_directory_iterator(SLUICE_SRC_DIR)) {
    if (!e.is_regular_file() || absl::EndsWith(e.path().string(), "_test.cc"))
      continue;
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    if (absl::StrContains(s.str(), needle))
      return true;
  }
  return false;
}

TEST(K8sManifestsTest, EnvIsDefinedAndUsed) {
  std::set<std::string> referenced;
  static const std::regex var(R"(\$\(([A-Za-z_][A-Za-z0-9_]*)\))");
  for (const Container& c : Containers()) {
    const std::map<std::string, std::string> env = EnvOf(c.node);
    std::vector<std::string> words = Strings(c.node["command"]);
    for (const std::string& a : Strings(c.node["args"]))
      words.push_back(a);
    for (const std::string& w : words) {
      for (auto it = std::sregex_iterator(w.begin(), w.end(), var); it != std::sregex_iterator();
           ++it) {
        EXPECT_TRUE(env.contains((*it)[1])) << c.where() << ": $(" << (*it)[1] << ") undefined";
        referenced.insert((*it)[1]);
      }
    }
  }
  for (const Container& c : Containers()) {
    if (!IsSluice(c.node))
      continue;
    for (const auto& [name, value] : EnvOf(c.node)) {
      if (absl::StartsWith(name, "SLUICE_") && !referenced.contains(name)) {
        EXPECT_TRUE(SourcesRead(name)) << c.where() << ": nothing reads " << name;
      }
    }
  }
}

std::vector<std::string> ExpandedArgs(const std::string& kind, const std::string& name) {
  const Object* o = Find(kind, name);
  if (o == nullptr)
    return {};
  const YAML::Node c = o->node["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> args;
  for (const std::string& a : Strings(c["args"]))
    args.push_back(Expand(a, EnvOf(c)));
  return args;
}

std::string ArgAfter(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag)
      return args[i + 1];
  }
  return "";
}

TEST(K8sManifestsTest, TheShapeIssue12AsksFor) {
  ASSERT_NE(Find("StatefulSet", "sluice-etcd"), nullptr);
  const Object* controller = Find("Deployment", "sluice-controller");
  ASSERT_NE(controller, nullptr);
  EXPECT_GE(controller->node["spec"]["replicas"].as<int>(), 2);
  EXPECT_TRUE(absl::StartsWith(ArgAfter(ExpandedArgs("Deployment", "sluice-controller"),
                                        "--store"), "etcd://"));
  const Object* gateway = Find("Deployment", "sluice-gateway");
  ASSERT_NE(gateway, nullptr);
  EXPECT_GE(gateway->node["spec"]["replicas"].as<int>(), 2);
  const std::string controller_addr =
      ArgAfter(ExpandedArgs("Deployment", "sluice-gateway"), "--controller");
  EXPECT_TRUE(absl::StartsWith(controller_addr, "sluice-controller.")) << controller_addr;
  EXPECT_TRUE(absl::EndsWith(controller_addr, ":7071")) << controller_addr;

  const Object* agent = Find("DaemonSet", "sluice-agent");
  ASSERT_NE(agent, nullptr);
  const YAML::Node pod = agent->node["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["nodeSelector"].IsMap());
  EXPECT_TRUE(pod["tolerations"].IsSequence());
  bool shm = pod["hostIPC"].as<bool>(false);
  for (const YAML::Node& v : pod["volumes"])
    shm = shm || (v["hostPath"] && v["hostPath"]["path"].as<std::string>() == "/dev/shm");
  EXPECT_TRUE(shm) << "the token server's shared memory: hostIPC or a /dev/shm hostPath";
  const std::vector<std::string> args = ExpandedArgs("DaemonSet", "sluice-agent");
  EXPECT_TRUE(absl::StartsWith(ArgAfter(args, "--join"), "etcd://"));
  EXPECT_EQ(ArgAfter(args, "--device"), "cuda");
  const std::map<std::string, std::string> env = EnvOf(pod["containers"][0]);
  ASSERT_TRUE(env.contains("SLUICE_INTERCEPT_LIB"));
  EXPECT_TRUE(absl::EndsWith(env.at("SLUICE_INTERCEPT_LIB"), "libsluice_cuda.so"));
}

}  // namespace
