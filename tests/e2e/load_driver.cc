// LoadDriver: one timer chain per phase on the driver's loop; outcomes under a mutex.
#include "load_driver.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime::e2e {

absl::StatusOr<std::unique_ptr<LoadDriver>> LoadDriver::Create(const std::string& gateway,
                                                               const std::string& function,
                                                               std::string body,
                                                               absl::Duration deadline,
                                                               absl::Duration client_slack) {
  std::unique_ptr<LoadDriver> d(new LoadDriver());
  SLUICE_ASSIGN_OR_RETURN(d->gateway_, http::Endpoint::Parse(gateway));
  SLUICE_ASSIGN_OR_RETURN(d->loop_, http::EventLoop::Create());
  http::ClientOptions o;
  o.max_connections_per_endpoint = 256;  // open loop: one connection per outstanding request
  d->client_ = std::make_unique<http::Client>(*d->loop_, o);
  d->target_ = "/v2/models/" + function + "/infer";
  d->body_ = std::move(body);
  d->deadline_ = deadline;
  d->client_slack_ = client_slack;
  return d;
}

LoadDriver::~LoadDriver() {
  // The loop first: no SendNext timer may run once the client is gone.
  if (loop_ != nullptr)
    loop_->Stop();
  client_.reset();
}

void LoadDriver::Start(double rps, absl::Duration duration) {
  const int64_t n = static_cast<int64_t>(std::ceil(rps * absl::ToDoubleSeconds(duration)));
  int phase = 0;
  {
    absl::MutexLock l(&mu_);
    phase = phases_++;
    scheduled_ += n;
  }
  if (n == 0)
    return;
  const absl::Time t0 = loop_->Now();
  const absl::Duration gap = absl::Seconds(1) / rps;
  loop_->Post([this, phase, n, t0, gap] { SendNext(phase, 0, n, t0, gap); });
}

void LoadDriver::SendNext(int phase, int64_t k, int64_t n, absl::Time t0, absl::Duration gap) {
  size_t index = 0;
  {
    absl::MutexLock l(&mu_);
    index = outcomes_.size();
    Outcome o;
    o.phase = phase;
    o.sent = absl::Now();
    outcomes_.push_back(std::move(o));
  }
  http::Request r;
  r.method = "POST";
  r.target = target_;
  r.body = body_;
  r.headers = {{"content-type", "application/json"},
               {"sluice-timeout-ms", absl::StrCat(absl::ToInt64Milliseconds(deadline_))}};
  const absl::Time start = absl::Now();
  client_->Send(gateway_, std::move(r), deadline_ + client_slack_,
                [this, index, start](absl::StatusOr<http::Response> resp) {
                  absl::MutexLock l(&mu_);
                  Outcome& o = outcomes_[index];
                  o.answered = true;
                  o.latency = absl::Now() - start;
                  if (resp.ok()) {
                    o.status = resp->status;
                    o.body = std::move(resp->body);
                  } else {
                    o.error = resp.status();
                  }
                  ++finished_;
                });
  if (k + 1 < n) {
    loop_->RunAt(t0 + gap * (k + 1),
                 [this, phase, k, n, t0, gap] { SendNext(phase, k + 1, n, t0, gap); });
  }
}

bool LoadDriver::WaitAll(absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &LoadDriver::Done), timeout);
  return Done();
}

std::vector<Outcome> LoadDriver::outcomes() const {
  absl::MutexLock l(&mu_);
  return outcomes_;
}

int64_t LoadDriver::sent() const {
  absl::MutexLock l(&mu_);
  return static_cast<int64_t>(outcomes_.size());
}

namespace {

bool ClearError(const Outcome& o) {
  if (o.status < 400)
    return false;
  const nlohmann::json j = nlohmann::json::parse(o.body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object())
    return false;
  const nlohmann::json& e = j["error"];
  return e.value("code", 0) == o.status && !e.value("message", std::string()).empty();
}

}  // namespace

Tally Count(const std::vector<Outcome>& outcomes, int phase) {
  Tally t;
  for (const Outcome& o : outcomes) {
    if (phase >= 0 && o.phase != phase)
      continue;
    ++t.total;
    if (o.answered && o.status >= 200 && o.status < 300) {
      ++t.ok;
    } else if (o.answered && ClearError(o)) {
      ++t.clear_errors;
    } else {
      ++t.vanished;
      if (t.first_unclear.empty()) {
        t.first_unclear = !o.answered     ? "never answered"
                          : o.status == 0 ? "transport: " + o.error.ToString()
                                          : absl::StrCat(o.status, " ", o.body);
      }
    }
  }
  return t;
}

}  // namespace sluice::runtime::e2e
