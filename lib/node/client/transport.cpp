#include "lib/node/client/transport.hpp"

namespace archctl::node {

Result<nlohmann::json> call_operation(Transport& transport, Op op, nlohmann::json args, ProgressSink* sink) {
    return call_operation(transport, std::string(name(op)), std::move(args), sink);
}

Result<nlohmann::json> call_operation(Transport& transport, const std::string& op, nlohmann::json args,
                                      ProgressSink* sink) {
    Request request;
    request.op = op;
    request.args = std::move(args);
    ARCHCTL_TRY_ASSIGN(Response response, transport.call(std::move(request), sink));
    if (!response.ok) return response.error;
    response.result["io"] = {{"rchar", response.io.rchar}, {"read_bytes", response.io.read_bytes}};
    return std::move(response.result);
}

}  // namespace archctl::node
