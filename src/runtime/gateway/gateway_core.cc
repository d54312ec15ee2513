// The request path: a request is validated, admitted to its function's bounded queue, sent in a
// batch when core::BatchDueAt says so and an instance has a free slot, and answered from its
// slot of the batch response, by its deadline timer (504), or after retries (502). Every
// accepted request is answered exactly once: `pending_` owns its Responder until Finish().
#include "runtime/gateway/gateway_core.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "core/serving/batching.h"
#include "nlohmann/json.hpp"
#include "runtime/gateway/batch_response.h"
#include "runtime/gateway/kserve_request.h"

namespace sluice::runtime::internal {
namespace {

double Seconds(absl::Duration d) {
  return absl::ToDoubleSeconds(d);
}

http::Response WithRetryAfter(http::Response r, absl::Duration after) {
  r.headers.emplace_back("retry-after", std::to_string(absl::ToInt64Seconds(after)));
  return r;
}

}  // namespace

GatewayCore::GatewayCore(const GatewayOptions& options, http::EventLoop& loop, http::Client& client,
                         GatewayMetrics& metrics, http::Endpoint controller)
    : options_(options),
      loop_(loop),
      client_(client),
      metrics_(metrics),
      controller_(std::move(controller)) {}

GatewayCore::~GatewayCore() = default;

void GatewayCore::HandleReady(http::Request&, http::Responder respond) {
  if (routes_version_ < 0)
    return respond(http::ErrorResponse(503, "routes not loaded from the controller yet"));
  respond(http::JsonResponse(200, R"({"ready":true})"));
}

void GatewayCore::HandleInfer(http::Request& req, http::Responder respond) {
  if (routes_version_ < 0)  // a replica just started: not "unknown", just not known yet
    return respond(http::ErrorResponse(503, "routes not loaded from the controller yet"));
  const std::string name = req.param("name");
  auto it = functions_.find(name);
  if (it == functions_.end() && pipelines_.contains(name))
    return HandlePipeline(req, std::move(respond));
  if (it == functions_.end())
    return respond(http::ErrorResponse(404, absl::StrCat("unknown function '", name, "'")));
  FunctionState& f = *it->second;
  absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(req.body);
  if (!info.ok()) {
    metrics_.Requests(*f.metrics, name, 400).Inc();
    return respond(http::ErrorResponse(400, std::string(info.status().message())));
  }
  absl::Duration timeout = f.route.timeout;
  if (const std::string h = req.header("sluice-timeout-ms"); !h.empty()) {
    int64_t ms = 0;
    if (!absl::SimpleAtoi(h, &ms) || ms <= 0)
      return respond(http::ErrorResponse(400, "header Sluice-Timeout-Ms: must be an integer > 0"));
    timeout = absl::Milliseconds(ms);
  }
  if (f.route.Unservable()) {
    metrics_.Requests(*f.metrics, name, 503).Inc();
    return respond(WithRetryAfter(
        http::ErrorResponse(503, absl::StrCat("function '", name, "' cannot be served (state ",
                                              f.route.state, ")")),
        absl::Seconds(1)));
  }
  const absl::Time now = loop_.Now();
  const uint64_t id = next_id_++;
  const core::AdmitResult admit =
      f.queue.Admit({id, now, now + timeout}, f.dispatcher.ReadyCapacity());
  if (!admit.accepted) {
    metrics_.Requests(*f.metrics, name, 429).Inc();
    f.window.OnRejected();  // an SLO violation in the load report (dashboard)
    return respond(WithRetryAfter(
        http::ErrorResponse(429, absl::StrCat("queue of function '", name, "' is full (",
                                              f.queue.max_queued(), " requests)")),
        admit.retry_after));
  }
  ++f.arrivals;
  f.window.OnArrival(now);
  PendingRequest& p = pending_[id];
  p.function = name;
  p.body = std::move(req.body);
  p.kserve_id = std::move(info->id);
  p.respond = std::move(respond);
  p.arrival = now;
  p.deadline = now + timeout;
  if (f.dispatcher.ready_count() == 0) {
    f.metrics->cold_starts->Inc();
    MaybeWake(f);
  }
  TryDispatch(f);
  f.metrics->queue_length->Set(static_cast<double>(f.queue.size()));
  Rearm(f);
}

void GatewayCore::Finish(uint64_t id, http::Response response) {
  auto it = pending_.find(id);
  if (it == pending_.end())
    return;
  PendingRequest p = std::move(it->second);
  pending_.erase(it);
  auto f = functions_.find(p.function);
  if (f != functions_.end()) {
    FunctionState& fs = *f->second;
    if (p.in_flight) {
      fs.in_flight_deadlines.erase({p.deadline, id});
      --fs.in_flight_requests;
    }
    metrics_.Requests(*fs.metrics, p.function, response.status).Inc();
    fs.metrics->duration->Observe(Seconds(loop_.Now() - p.arrival));
    fs.window.OnAnswered(loop_.Now() - p.arrival, response.status >= 400);
  }
  if (p.llm != nullptr)
    return FinishLlm(p, std::move(response));
  p.respond(std::move(response));
}

void GatewayCore::TryDispatch(FunctionState& f) {
  const absl::Time now = loop_.Now();
  while (!f.queue.empty()) {
    const absl::Time due = core::BatchDueAt(now, f.queue.size(), *f.queue.OldestArrival(),
                                            f.route.max_batch, f.route.max_queue_delay);
    if (due > now)
      return;
    const std::optional<int64_t> instance = f.dispatcher.Pick(options_.max_batches_per_instance);
    if (!instance.has_value())
      return;  // held: cold start, or every instance has its batches in flight
    std::vector<uint64_t> ids;
    const bool llm = f.route.kind == "llm";  // one request per dispatch: the instance batches
    for (const core::QueuedRequest& r : f.queue.NextBatch(llm ? 1 : f.route.max_batch)) {
      f.metrics->queue_duration->Observe(Seconds(now - r.arrival));
      ids.push_back(r.id);
    }
    if (llm) {
      SendLlm(f, *instance, ids.front());
    } else {
      SendBatch(f, *instance, std::move(ids));
    }
  }
}

void GatewayCore::SendBatch(FunctionState& f, int64_t instance, std::vector<uint64_t> ids) {
  http::Request req;
  req.method = "POST";
  req.target = "/sluice/v1/batch";
  req.headers.emplace_back("content-type", "application/json");
  req.body = R"({"requests":[)";
  absl::Time last_deadline = loop_.Now();
  for (size_t i = 0; i < ids.size(); ++i) {
    PendingRequest& p = pending_.at(ids[i]);
    absl::StrAppend(&req.body, i == 0 ? "" : ",", p.body);
    ++p.attempts;
    if (!p.in_flight) {
      p.in_flight = true;
      f.in_flight_deadlines.emplace(p.deadline, ids[i]);
      ++f.in_flight_requests;
    }
    last_deadline = std::max(last_deadline, p.deadline);
  }
  req.body += "]}";
  f.dispatcher.OnDispatch(instance);
  f.metrics->batch_size->Observe(static_cast<double>(ids.size()));
  const absl::Duration timeout = std::max(last_deadline - loop_.Now(), absl::Milliseconds(1));
  client_.Send(f.endpoints.at(instance), std::move(req), timeout,
               [this, function = f.route.name, instance,
                ids = std::move(ids)](absl::StatusOr<http::Response> r) mutable {
                 OnBatchDone(function, instance, ids, std::move(r));
               });
}

void GatewayCore::OnBatchDone(const std::string& function, int64_t instance,
                              const std::vector<uint64_t>& ids,
                              absl::StatusOr<http::Response> result) {
  if (shut_down_)
    return;
  auto it = functions_.find(function);
  FunctionState* f = it == functions_.end() ? nullptr : it->second.get();
  if (f != nullptr)
    f->dispatcher.OnComplete(instance);
  if (!result.ok()) {
    if (f != nullptr && absl::IsUnavailable(result.status()))
      f->dispatcher.Upsert(instance, f->dispatcher.EffectiveCapacity(instance), false);
    RetryOrFail(f, instance, ids, result.status().ToString());
  } else if (result->status >= 500) {
    RetryOrFail(f, instance, ids,
                absl::StrCat("HTTP ", result->status, ": ", result->body.substr(0, 200)));
  } else {
    AnswerBatch(function, instance, ids, *result);
  }
  if (f != nullptr) {
    TryDispatch(*f);
    f->metrics->queue_length->Set(static_cast<double>(f->queue.size()));
    Rearm(*f);
  }
}

void GatewayCore::AnswerBatch(const std::string& function, int64_t instance,
                              const std::vector<uint64_t>& ids, const http::Response& response) {
  const std::string who = absl::StrCat("instance ", instance, " of '", function, "'");
  if (response.status >= 300) {
    for (uint64_t id : ids) {
      Finish(id, http::ErrorResponse(response.status, absl::StrCat(who, " rejected the batch: ",
                                                                   response.body.substr(0, 200))));
    }
    return;
  }
  absl::StatusOr<std::vector<BatchItem>> items = SplitBatchResponse(response.body);
  if (items.ok() && items->size() != ids.size()) {
    items = absl::InvalidArgumentError(absl::StrCat("batch response: ", items->size(),
                                                    " responses for ", ids.size(), " requests"));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    auto p = pending_.find(ids[i]);
    if (p == pending_.end())
      continue;  // already answered (deadline)
    if (!items.ok()) {
      Finish(ids[i], http::ErrorResponse(502, absl::StrCat(who, " answered a malformed batch: ",
                                                           items.status().message())));
      continue;
    }
    const BatchItem& item = (*items)[i];
    if (item.has_error) {
      // Rare path: only an error response is parsed, to quote its message.
      const nlohmann::json r = nlohmann::json::parse(item.text, nullptr, false);
      const nlohmann::json e = r.is_object() ? r.value("error", nlohmann::json()) : r;
      // The SDK's "code" says whose fault it was: 400 the request's, else the function's.
      const bool bad_request = r.is_object() && r.contains("code") &&
                               r["code"].is_number_integer() && r["code"].get<int>() == 400;
      const int code = bad_request ? 400 : 500;
      Finish(ids[i], http::ErrorResponse(
                         code, absl::StrCat(who, code == 400 ? " rejected the request: "
                                                             : " failed the request: ",
                                            e.is_string() ? e.get<std::string>() : e.dump())));
      continue;
    }
    Finish(ids[i], http::JsonResponse(200, WithRequestId(item, p->second.kserve_id)));
  }
}

void GatewayCore::RetryOrFail(FunctionState* f, int64_t instance, const std::vector<uint64_t>& ids,
                              const std::string& why) {
  const std::string failed = absl::StrCat("instance ", instance, " failed: ", why);
  std::map<int64_t, std::vector<uint64_t>> retries;  // target instance -> requests
  const absl::Time now = loop_.Now();
  for (uint64_t id : ids) {
    auto it = pending_.find(id);
    if (it == pending_.end())
      continue;
    PendingRequest& p = it->second;
    p.tried.push_back(instance);
    std::optional<int64_t> next;
    if (f != nullptr && p.attempts <= options_.max_retries && p.deadline > now)
      next = f->dispatcher.Pick(0, p.tried);
    if (!next.has_value()) {
      Finish(id, http::ErrorResponse(502, absl::StrCat(failed, "; ", p.attempts - 1, " retr",
                                                       p.attempts == 2 ? "y" : "ies",
                                                       " made, no other instance to retry on")));
      continue;
    }
    retries[*next].push_back(id);
  }
  for (auto& [target, batch] : retries) {
    if (f->route.kind == "llm") {
      for (uint64_t id : batch)
        SendLlm(*f, target, id);
    } else {
      SendBatch(*f, target, std::move(batch));
    }
  }
}

void GatewayCore::ExpireDeadlines(FunctionState& f, absl::Time now) {
  for (const core::QueuedRequest& r : f.queue.Expired(now)) {
    Finish(r.id, http::ErrorResponse(
                     504, absl::StrCat("deadline of ", absl::FormatDuration(r.deadline - r.arrival),
                                       " exceeded while queued")));
  }
  while (!f.in_flight_deadlines.empty() && f.in_flight_deadlines.begin()->first <= now) {
    const auto [deadline, id] = *f.in_flight_deadlines.begin();
    const PendingRequest& p = pending_.at(id);
    Finish(id, http::ErrorResponse(
                   504, absl::StrCat("deadline of ", absl::FormatDuration(deadline - p.arrival),
                                     " exceeded while an instance was serving "
                                     "the request")));
  }
}

void GatewayCore::Rearm(FunctionState& f) {
  absl::Time at = f.queue.NextDeadline();
  if (!f.in_flight_deadlines.empty())
    at = std::min(at, f.in_flight_deadlines.begin()->first);
  if (!f.queue.empty() && f.dispatcher.Pick(options_.max_batches_per_instance).has_value()) {
    at = std::min(at, core::BatchDueAt(loop_.Now(), f.queue.size(), *f.queue.OldestArrival(),
                                       f.route.max_batch, f.route.max_queue_delay));
  }
  if (at == absl::InfiniteFuture() || (f.timer != 0 && at >= f.timer_at))
    return;  // an earlier timer is armed already; it re-arms when it fires
  if (f.timer != 0)
    loop_.Cancel(f.timer);
  f.timer_at = at;
  f.timer = loop_.RunAt(at, [this, name = f.route.name] { OnTimer(name); });
}

void GatewayCore::OnTimer(const std::string& function) {
  auto it = functions_.find(function);
  if (shut_down_ || it == functions_.end())
    return;
  FunctionState& f = *it->second;
  f.timer = 0;
  f.timer_at = absl::InfiniteFuture();
  ExpireDeadlines(f, loop_.Now());
  TryDispatch(f);
  f.metrics->queue_length->Set(static_cast<double>(f.queue.size()));
  Rearm(f);
}

void GatewayCore::FailQueued(FunctionState& f, int status, const std::string& message) {
  for (const core::QueuedRequest& r : f.queue.NextBatch(static_cast<int>(f.queue.size()) + 1))
    Finish(r.id, WithRetryAfter(http::ErrorResponse(status, message), absl::Seconds(1)));
  f.metrics->queue_length->Set(0);
}

}  // namespace sluice::runtime::internal
