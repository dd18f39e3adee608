#include "lib/config/config.hpp"

#include <cmath>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "lib/base/fs.hpp"
#include "lib/base/units.hpp"
#include "lib/config/schema.hpp"
#include "lib/config/values.hpp"

namespace archctl::config {
namespace {

const char* env(const LoadOptions& o, const char* name) {
    const char* v = o.getenv ? o.getenv(name) : std::getenv(name);
    return v && *v ? v : nullptr;
}

std::string home_dir(const LoadOptions& o) {
    const char* h = env(o, "HOME");
    return h ? h : "/root";
}

Error file_error(const std::string& path, const toml::source_region& where, const std::string& key,
                 const std::string& what) {
    return Error(ErrorCode::CONFIG_INVALID,
                 fmt::format("cannot read config '{}': line {}: {}: {}", path, where.begin.line, key, what));
}

// Convert one TOML node to a Value of the schema type.
Result<Value> convert(const toml::node& node, const KeySpec& spec, const std::string& key, const std::string& path) {
    Value v;
    v.type = spec.type;
    auto fail = [&](const char* expected) { return file_error(path, node.source(), key, expected); };
    switch (spec.type) {
        case ValueType::string:
            if (!node.is_string()) return fail("expected a string");
            v.text = node.as_string()->get();
            break;
        case ValueType::boolean:
            if (!node.is_boolean()) return fail("expected true or false");
            v.boolean = node.as_boolean()->get();
            break;
        case ValueType::integer:
            if (!node.is_integer()) return fail("expected an integer");
            v.integer = node.as_integer()->get();
            break;
        case ValueType::number:
            if (node.is_integer()) v.number = static_cast<double>(node.as_integer()->get());
            else if (node.is_floating_point()) v.number = node.as_floating_point()->get();
            else return fail("expected a number such as 2 or 1.5");
            break;
        case ValueType::size:
        case ValueType::duration: {
            bool size = spec.type == ValueType::size;
            // A size is written with its unit: `min_free = 5` would silently mean 5 bytes.
            auto bare_number = [](const std::string& t) {
                return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos && t.find_first_not_of('0') != std::string::npos;
            };
            if (size && ((node.is_integer() && node.as_integer()->get() != 0) ||
                         (node.is_string() && bare_number(node.as_string()->get()))))
                return fail("a size needs a unit: write \"5G\" for 5 GiB, \"500M\", or \"5B\" for 5 bytes (a bare number is refused)");
            if (node.is_integer() && node.as_integer()->get() >= 0) {
                v.integer = node.as_integer()->get();
                v.text = std::to_string(v.integer);
                break;
            }
            if (!node.is_string()) return fail(size ? "expected a size such as \"500M\" or \"20G\"" : "expected a duration such as \"30m\"");
            v.text = node.as_string()->get();
            if (size) {
                auto parsed = parse_size(v.text);
                if (!parsed.ok()) return fail("expected a size such as \"500M\" or \"20G\"");
                v.integer = static_cast<std::int64_t>(parsed.value());
            } else {
                auto parsed = parse_duration_seconds(v.text);
                if (!parsed.ok()) return fail("expected a duration such as \"30s\", \"30m\" or \"2h\"");
                v.integer = parsed.value();
            }
            break;
        }
        case ValueType::string_array: {
            const toml::array* arr = node.as_array();
            if (!arr) return fail("expected an array of strings");
            for (const toml::node& item : *arr) {
                if (!item.is_string()) return fail("expected an array of strings");
                v.items.push_back(item.as_string()->get());
            }
            break;
        }
    }
    return v;
}

// Walk a parsed TOML table, validating against the schema and recording values into `out`.
Status flatten(const toml::table& table, const std::string& prefix, const std::string& path, const std::string& origin,
               Values& out, std::vector<std::string>& warnings) {
    for (const auto& [k, node] : table) {
        std::string key(k.str());
        std::string dotted = prefix.empty() ? key : prefix + "." + key;
        if (node.is_table()) {
            if (!known_table(dotted)) continue;  // unknown tables are ignored (newer config)
            ARCHCTL_TRY_STATUS(flatten(*node.as_table(), dotted, path, origin, out, warnings));
            continue;
        }
        const KeySpec* spec = find_key(dotted);
        if (!spec) {
            std::string near = closest_key(prefix, key);
            warnings.push_back(fmt::format("unknown key '{}' in [{}] of '{}'{}", key, prefix.empty() ? "top level" : prefix,
                                           path, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
            continue;
        }
        ARCHCTL_TRY_ASSIGN(Value v, convert(node, *spec, dotted, path));
        v.origin = origin;
        out[dotted] = std::move(v);
    }
    return {};
}

bool group_or_world_readable(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && (st.st_mode & 044) != 0;
}

// Load one checked file layer. A missing user/state file is simply absent; a missing --config is an error.
enum class Presence { optional, required };

Status load_file(const Layer& layer, const std::string& origin, Presence presence, Values& out,
                 std::vector<std::string>& warnings) {
    const std::string& path = layer.path;
    if (!layer.exists) {
        if (presence == Presence::optional) return {};
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read config '{}': no such file", path),
                     "check the --config path");
    }
    ARCHCTL_TRY_ASSIGN(std::string text, read_checked(layer));
    toml::table table;
    try {
        table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read config '{}': line {}: {}", path,
                                                   e.source().begin.line, std::string(e.description())));
    }
    Values layer_values;
    ARCHCTL_TRY_STATUS(flatten(table, "", path, origin, layer_values, warnings));
    bool inline_secret = false;
    for (auto& [key, value] : layer_values) {
        const KeySpec* spec = find_key(key);
        if (spec && spec->secret) inline_secret = true;
        out[key] = std::move(value);
    }
    if (inline_secret && group_or_world_readable(path))
        warnings.push_back(fmt::format("config '{}' holds secrets and is readable by others (chmod 600 it)", path));
    return {};
}

std::string default_state_dir(const LoadOptions& o) {
    if (const char* x = env(o, "XDG_STATE_HOME")) return std::string(x) + "/archctl";
    return home_dir(o) + "/.local/state/archctl";
}

std::string user_config_path(const LoadOptions& o) {
    if (!o.config_file.empty()) return o.config_file;
    if (const char* c = env(o, "ARCHCTL_CONFIG")) return c;
    if (const char* x = env(o, "XDG_CONFIG_HOME")) return std::string(x) + "/archctl/config.toml";
    return home_dir(o) + "/.config/archctl/config.toml";
}

Value text_value(std::string text, std::string origin) {
    Value v;
    v.text = std::move(text);
    v.origin = std::move(origin);
    return v;
}

Status apply_env(const LoadOptions& o, Values& values) {
    // A size or a duration from the environment, for `key`.
    auto measured = [&](const char* var, const std::string& key, ValueType type) -> Status {
        const char* text = env(o, var);
        if (!text) return {};
        bool size = type == ValueType::size;
        Result<std::int64_t> parsed = parse_duration_seconds(text);
        if (size) {
            auto bytes = parse_size(text);
            parsed = bytes.ok() ? Result<std::int64_t>(static_cast<std::int64_t>(bytes.value())) : Result<std::int64_t>(bytes.take_error());
        }
        if (!parsed.ok())
            return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid environment variable {}='{}': {}", var, text,
                                                                size ? "expected a size such as 500M or 20G"
                                                                     : "expected a duration such as 30s, 5m or 1h"));
        Value v = text_value(text, fmt::format("env:{}", var));
        v.type = type;
        v.integer = parsed.value();
        values[key] = v;
        return {};
    };
    ARCHCTL_TRY_STATUS(measured("ARCHCTL_MIN_FREE", "transfer.min_free", ValueType::size));
    ARCHCTL_TRY_STATUS(measured("ARCHCTL_OUTAGE_WAIT", "transfer.outage_wait", ValueType::duration));
    if (const char* t = env(o, "ARCHCTL_VERIFY_TRANSIT")) {
        std::string s = t;
        if (s != "0" && s != "1" && s != "true" && s != "false")
            return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid environment variable ARCHCTL_VERIFY_TRANSIT='{}': expected 0 or 1", s));
        Value v = text_value(s, "env:ARCHCTL_VERIFY_TRANSIT");
        v.type = ValueType::boolean;
        v.boolean = s == "1" || s == "true";
        values["transfer.verify_transit"] = v;
    }
    if (const char* p = env(o, "ARCHCTL_PROGRESS")) {
        std::string s = p;
        if (s != "0" && s != "line" && s != "panel" && s != "auto")
            return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid environment variable ARCHCTL_PROGRESS='{}': expected 0, line or panel", s));
        values["progress"] = text_value(s, "env:ARCHCTL_PROGRESS");
    }
    return {};
}

}  // namespace

std::string Secret::describe(const std::string& file_key) const {
    if (!set()) return "<unset>";
    return file.empty() ? "<set>" : fmt::format("<set, from {} {}>", file_key, file);
}

std::string to_string(Role role) { return role == Role::cache ? "cache" : "archive"; }

std::string to_string(TierOrder order) {
    switch (order) {
        case TierOrder::oldest: return "oldest";
        case TierOrder::largest: return "largest";
        case TierOrder::least_active: return "least_active";
    }
    return "oldest";
}

std::string to_string(TierEvict evict) {
    switch (evict) {
        case TierEvict::to_goal: return "to_goal";
        case TierEvict::always: return "always";
        case TierEvict::never: return "never";
    }
    return "to_goal";
}

const NodeConfig* Config::node(const std::string& name) const {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : &it->second;
}

namespace {
Status build(const Values& values, Config& config, std::vector<std::string>& warnings);
}

Result<Config> load(const LoadOptions& options, std::vector<std::string>& warnings) {
    Values values;
    auto set_default = [&](const std::string& key, ValueType type, std::string text, std::int64_t integer = 0) {
        Value v = text_value(std::move(text), "default");
        v.type = type;
        v.integer = integer;
        values[key] = v;
    };
    set_default("transfer.min_free", ValueType::size, "2G", std::int64_t{2} << 30);
    set_default("transfer.verify_transit", ValueType::boolean, "false");
    set_default("evict.count_shared_copies", ValueType::boolean, "false");
    set_default("transfer.outage_wait", ValueType::duration, "5m", 300);
    set_default("routes.policy", ValueType::string, "on_demand");
    set_default("routes.provision_timeout", ValueType::duration, "30m", 1800);
    set_default("routes.check_max_age", ValueType::duration, "24h", 86400);
    set_default("retention.tombstone_days", ValueType::integer, "30", 30);
    set_default("progress", ValueType::string, "auto");

    std::string user = user_config_path(options);
    Presence user_presence = options.config_file.empty() && !env(options, "ARCHCTL_CONFIG") ? Presence::optional
                                                                                              : Presence::required;
    uid_t uid = options.uid ? static_cast<uid_t>(*options.uid) : ::geteuid();
    std::vector<Layer> layers;
    // A layer another user owns or others can write: refused (the default), or left out and
    // reported (`archctl config`).
    auto usable = [&](Layer layer) -> Result<bool> {
        bool refused = layer.refused();
        layers.push_back(std::move(layer));
        if (refused && options.unsafe == UnsafeLayers::refuse) return layers.back().error();
        return !refused;
    };
    // The user config cannot trust itself: it is checked against an empty trust list.
    ARCHCTL_TRY_ASSIGN(bool user_ok, usable(TrustCheck(uid, {}, user).check(LayerKind::user, user)));
    if (user_ok) ARCHCTL_TRY_STATUS(load_file(layers.back(), "user:" + user, user_presence, values, warnings));
    std::vector<std::string> trusted;
    if (auto t = values.find("safe.trusted"); t != values.end()) {
        ARCHCTL_TRY_ASSIGN(trusted, validate_trusted(t->second.items, t->second.origin));
    }
    TrustCheck check(uid, trusted, user);

    // The state directory decides where the state layer lives: flag > env > user file > default.
    std::string state_dir;
    std::string state_origin;
    if (!options.state_dir.empty()) { state_dir = options.state_dir; state_origin = "flag"; }
    else if (const char* s = env(options, "ARCHCTL_STATE")) { state_dir = s; state_origin = "env:ARCHCTL_STATE"; }
    else if (values.count("state_dir")) { state_dir = values["state_dir"].text; state_origin = values["state_dir"].origin; }
    else { state_dir = default_state_dir(options); state_origin = "default"; }

    std::string state_file = state_dir + "/config.toml";
    ARCHCTL_TRY_ASSIGN(bool dir_ok, usable(check.check(LayerKind::state_dir, state_dir)));
    ARCHCTL_TRY_ASSIGN(bool file_ok, usable(check.check(LayerKind::state, state_file)));
    Values state_layer;
    if (dir_ok && file_ok)
        ARCHCTL_TRY_STATUS(load_file(layers.back(), "state:" + state_file, Presence::optional, state_layer, warnings));
    if (state_layer.erase("state_dir"))
        warnings.push_back(fmt::format("'state_dir' in '{}' is ignored: the state directory cannot move itself", state_file));
    if (state_layer.erase("safe.trusted"))
        warnings.push_back(fmt::format("'safe.trusted' in '{}' is ignored: only the user config can trust a path", state_file));
    for (auto& [k, v] : state_layer) values[k] = std::move(v);
    ARCHCTL_TRY_STATUS(apply_env(options, values));
    if (options.min_free) {
        Value v = text_value(std::to_string(*options.min_free), "flag");
        v.type = ValueType::size;
        v.integer = static_cast<std::int64_t>(*options.min_free);
        values["transfer.min_free"] = v;
    }
    Value sd = text_value(state_dir, state_origin);
    values["state_dir"] = sd;

    Config config;
    ARCHCTL_TRY_STATUS(build(values, config, warnings));
    config.layers = std::move(layers);
    config.trusted = std::move(trusted);
    return config;
}

Status refusal(const Config& config) {
    for (const Layer& layer : config.layers)
        if (layer.refused()) return layer.error();
    return {};
}

std::string mask_url(const std::string& url) {
    std::size_t scheme = url.find("://");
    std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    std::size_t end = url.find_first_of("/?#", start);
    std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string out = url.substr(0, start);
    std::size_t at = authority.rfind('@');
    if (at != std::string::npos) {
        std::string userinfo = authority.substr(0, at);
        std::size_t colon = userinfo.find(':');
        out += colon == std::string::npos ? userinfo : userinfo.substr(0, colon) + ":<set>";
        out += authority.substr(at);
    } else {
        out += authority;
    }
    if (end == std::string::npos) return out;
    std::string rest = url.substr(end);
    std::size_t query = rest.find('?');
    if (query == std::string::npos) return out + rest;
    std::size_t fragment = rest.find('#', query);
    std::string params = rest.substr(query + 1, fragment == std::string::npos ? std::string::npos : fragment - query - 1);
    out += rest.substr(0, query + 1);
    std::size_t p = 0;
    while (p <= params.size()) {
        std::size_t amp = params.find('&', p);
        std::string param = params.substr(p, amp == std::string::npos ? std::string::npos : amp - p);
        std::size_t eq = param.find('=');
        out += (p ? "&" : "") + (eq == std::string::npos ? param : param.substr(0, eq) + "=<set>");
        if (amp == std::string::npos) break;
        p = amp + 1;
    }
    return fragment == std::string::npos ? out : out + rest.substr(fragment);
}

std::string str(const Values& values, const std::string& key, const std::string& fallback) {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second.text;
}

bool flag(const Values& values, const std::string& key) {
    auto it = values.find(key);
    return it != values.end() && it->second.boolean;
}

std::vector<std::string> items(const Values& values, const std::string& key) {
    auto it = values.find(key);
    return it == values.end() ? std::vector<std::string>{} : it->second.items;
}

// "2.0", "1.5", "0.25": a number as `config` shows it (always with a decimal point).
std::string format_number(double value) {
    std::string s = fmt::format("{}", value);
    return s.find_first_of(".en") == std::string::npos ? s + ".0" : s;
}

std::string display_value(const std::string& key, const Value& v, const Config& config) {
    const KeySpec* spec = find_key(key);
    if (spec && spec->secret) return "<set>";
    switch (v.type) {
        case ValueType::boolean: return v.boolean ? "true" : "false";
        case ValueType::integer: return std::to_string(v.integer);
        case ValueType::number: return format_number(v.number);
        case ValueType::size: return v.integer == 0 ? "0 (disabled)" : format_size(static_cast<std::uint64_t>(v.integer));
        case ValueType::duration: return format_duration(v.integer);
        case ValueType::string_array: {
            std::string s = "[";
            for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", \"" : "\"") + v.items[i] + "\"";
            return s + "]";
        }
        case ValueType::string: break;
    }
    (void)config;
    // A URL may carry a password (user:password@) or a token in its query.
    if (key.ends_with(".url") || key == "notify.url") return mask_url(v.text);
    return v.text;
}

namespace {

Result<Secret> read_secret(const Values& values, const std::string& inline_key, const std::string& file_key,
                           std::vector<std::string>& warnings) {
    Secret s;
    auto file = values.find(file_key);
    if (file != values.end()) {
        auto text = read_file(file->second.text);
        if (!text.ok())
            return Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read {} '{}': {}", file_key, file->second.text,
                                                       text.error().is(ErrorCode::NOT_FOUND) ? "no such file" : "unreadable"));
        std::string v = text.value();
        while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
        s.value = v;
        s.file = file->second.text;
        if (group_or_world_readable(s.file))
            warnings.push_back(fmt::format("secrets file '{}' is readable by others (chmod 600 it)", s.file));
        return s;
    }
    auto in = values.find(inline_key);
    if (in != values.end()) s.value = in->second.text;
    return s;
}



Status require(const Values& values, const std::string& node, const std::string& key) {
    std::string full = "nodes." + node + "." + key;
    if (!values.count(full) || values.at(full).text.empty())
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: node '{}' has no '{}'", node, key),
                     fmt::format("set {} in the config file", full));
    return {};
}

// A node root is an absolute path without '.' or '..' components: the node confines every
// request below it by its text, and a root that climbs would confine nothing the user meant.
Status check_root(const Values& values, const std::string& key) {
    const Value& v = values.at(key);
    const std::string& root = v.text;
    if (root.front() != '/')
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: {} '{}' is not an absolute path ({}); write the "
                                                            "node path from '/', e.g. '/srv/torrents'", key, root, v.origin));
    std::string normal;
    bool climbs = false, dot = false;
    std::size_t at = 1;
    while (at <= root.size()) {
        std::size_t slash = root.find('/', at);
        std::string part = root.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
        if (part == "..") {
            climbs = true;
            auto cut = normal.rfind('/');
            normal.erase(cut == std::string::npos ? 0 : cut);
        } else if (part == ".") {
            dot = true;
        } else if (!part.empty()) {
            normal += "/" + part;
        }
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    if (!climbs && !dot) return {};
    return Error(ErrorCode::CONFIG_INVALID,
                 fmt::format("invalid config: {} '{}' has a '{}' component ({}); write the path without it, e.g. '{}'", key, root,
                             climbs ? ".." : ".", v.origin, normal.empty() ? "/" : normal));
}

Result<NodeConfig> build_node(const Values& values, const std::string& name, std::vector<std::string>& warnings) {
    for (const char* key : {"role", "qb_root", "sync_root", "qbittorrent.url", "syncthing.url"})
        ARCHCTL_TRY_STATUS(require(values, name, key));
    std::string p = "nodes." + name + ".";
    NodeConfig n;
    n.name = name;
    std::string role = str(values, p + "role");
    if (role == "cache") n.role = Role::cache;
    else if (role == "archive") n.role = Role::archive;
    else return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: node '{}': role '{}' is not 'cache' or 'archive'", name, role));
    n.qb_root = str(values, p + "qb_root");
    n.sync_root = str(values, p + "sync_root");
    for (auto [key, root] : {std::pair{"qb_root", &n.qb_root}, std::pair{"sync_root", &n.sync_root}}) {
        ARCHCTL_TRY_STATUS(check_root(values, p + key));
        *root = strip_trailing_slashes(*root);
    }
    std::string transport = str(values, p + "transport", "local");
    if (values.count(p + "exec")) n.exec = values.at(p + "exec").items;
    if (transport == "local" && !n.exec.empty() && values.count(p + "transport"))
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: node '{}': transport is 'local' but exec is set", name));
    if (transport == "exec" && n.exec.empty())
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: node '{}': transport 'exec' needs exec = [\"ssh\", ...]", name));
    if (transport != "local" && transport != "exec")
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: node '{}': transport '{}' is not 'local' or 'exec'", name, transport));
    if (auto t = values.find(p + "timeout"); t != values.end()) {
        // `node serve` sends a keepalive every second; a shorter limit would cut healthy calls.
        if (t->second.integer < 2)
            return Error(ErrorCode::CONFIG_INVALID,
                         fmt::format("invalid config: {} '{}' is shorter than 2s ({})", p + "timeout", t->second.text, t->second.origin),
                         fmt::format("set {} to a duration such as \"20s\" or \"2m\"", p + "timeout"));
        n.timeout = std::chrono::seconds(t->second.integer);
    }
    n.qbittorrent.url = str(values, p + "qbittorrent.url");
    n.qbittorrent.username = str(values, p + "qbittorrent.username", "admin");
    ARCHCTL_TRY_ASSIGN(n.qbittorrent.password, read_secret(values, p + "qbittorrent.password", p + "qbittorrent.password_file", warnings));
    n.qbittorrent.ca_file = str(values, p + "qbittorrent.ca_file");
    n.qbittorrent.insecure_tls = flag(values, p + "qbittorrent.insecure_tls");
    if (auto t = values.find(p + "qbittorrent.export_timeout"); t != values.end()) {
        if (t->second.integer < 1)
            return Error(ErrorCode::CONFIG_INVALID,
                         fmt::format("invalid config: {} '{}' is shorter than 1s ({})", p + "qbittorrent.export_timeout", t->second.text,
                                     t->second.origin),
                         fmt::format("set {} to a duration such as \"10m\"", p + "qbittorrent.export_timeout"));
        n.qbittorrent.export_timeout = std::chrono::seconds(t->second.integer);
    }
    if (!str(values, p + "qbittorrent.bt_backup").empty()) {
        ARCHCTL_TRY_STATUS(check_root(values, p + "qbittorrent.bt_backup"));
        n.qbittorrent.bt_backup = strip_trailing_slashes(str(values, p + "qbittorrent.bt_backup"));
    }
    n.syncthing.url = str(values, p + "syncthing.url");
    ARCHCTL_TRY_ASSIGN(n.syncthing.api_key, read_secret(values, p + "syncthing.api_key", p + "syncthing.api_key_file", warnings));
    n.syncthing.ca_file = str(values, p + "syncthing.ca_file");
    n.syncthing.insecure_tls = flag(values, p + "syncthing.insecure_tls");
    if (values.count(p + "syncthing.addresses")) n.syncthing.addresses = values.at(p + "syncthing.addresses").items;
    std::string limits = str(values, p + "share_limits", "none");
    if (limits == "none") n.share_limits = ShareLimitsPolicy::none;
    else if (limits == "global") n.share_limits = ShareLimitsPolicy::global;
    else return Error(ErrorCode::CONFIG_INVALID,
                      fmt::format("invalid config: {} '{}' is not 'none' or 'global' ({})", p + "share_limits", limits,
                                  values.at(p + "share_limits").origin),
                      "'none' gives each torrent archctl adds its own limits of none; 'global' leaves it to the node's global share limits");
    std::string labels = str(values, p + "labels", "keep");
    if (labels == "keep") n.labels = LabelsPolicy::keep;
    else if (labels == "drop") n.labels = LabelsPolicy::drop;
    else return Error(ErrorCode::CONFIG_INVALID,
                      fmt::format("invalid config: {} '{}' is not 'keep' or 'drop' ({})", p + "labels", labels, values.at(p + "labels").origin),
                      "'keep' gives each torrent archctl adds the source's category and tags; 'drop' gives it none");
    const std::string map_prefix = p + "category_map.";
    for (auto it = values.lower_bound(map_prefix); it != values.end() && it->first.rfind(map_prefix, 0) == 0; ++it)
        n.category_map[it->first.substr(map_prefix.size())] = it->second.text;
    return n;
}



Status build(const Values& values, Config& config, std::vector<std::string>& warnings) {
    config.state_dir = values.at("state_dir").text;
    config.min_free = static_cast<std::uint64_t>(values.at("transfer.min_free").integer);
    config.outage_wait_s = values.at("transfer.outage_wait").integer;
    config.verify_transit = values.at("transfer.verify_transit").boolean || values.at("transfer.verify_transit").text == "true";
    config.count_shared_copies = values.at("evict.count_shared_copies").boolean || values.at("evict.count_shared_copies").text == "true";
    std::string policy = values.at("routes.policy").text;
    if (policy == "on_demand") config.route_policy = RoutePolicy::on_demand;
    else if (policy == "eager_mesh") config.route_policy = RoutePolicy::eager_mesh;
    else return Error(ErrorCode::CONFIG_INVALID, fmt::format("invalid config: routes.policy '{}' is not 'on_demand' or 'eager_mesh' ({})",
                                                    policy, values.at("routes.policy").origin));
    config.provision_timeout_s = values.at("routes.provision_timeout").integer;
    config.route_check_max_age_s = values.at("routes.check_max_age").integer;
    config.tombstone_days = values.at("retention.tombstone_days").integer;
    config.progress = values.at("progress").text;
    if (values.count("notify.exec")) config.notify_exec = values.at("notify.exec").items;
    if (values.count("notify.url")) config.notify_url = values.at("notify.url").text;
    if (!config.notify_url.empty() && config.notify_url.rfind("http://", 0) != 0 && config.notify_url.rfind("https://", 0) != 0)
        return Error(ErrorCode::CONFIG_INVALID,
                     fmt::format("invalid config: notify.url '{}' is not an http:// or https:// URL ({})", mask_url(config.notify_url),
                                 values.at("notify.url").origin),
                     "write the full URL the job-end document is POSTed to, e.g. url = \"https://hooks.example/archctl\"");

    std::vector<std::string> names;
    for (const auto& [key, v] : values) {
        if (key.rfind("nodes.", 0) != 0) continue;
        std::string name = key.substr(6, key.find('.', 6) - 6);
        if (names.empty() || names.back() != name) names.push_back(name);
    }
    for (const std::string& name : names) {
        ARCHCTL_TRY_ASSIGN(NodeConfig node, build_node(values, name, warnings));
        config.nodes[name] = std::move(node);
    }
    for (const std::string& name : tier_names(values)) {
        ARCHCTL_TRY_ASSIGN(TierPolicy tier, build_tier(values, config, name));
        config.tiers[name] = std::move(tier);
    }
    for (const auto& [key, v] : values) {
        config.origin[key] = v.origin;
        config.display[key] = display_value(key, v, config);
        if (v.type == ValueType::string_array) config.lists[key] = v.items;
    }
    // A tier's order and evict show their defaults too.
    for (const auto& [name, tier] : config.tiers) {
        std::string p = "tier." + name + ".";
        for (const auto& [key, shown] : {std::pair{p + "order", to_string(tier.order)}, std::pair{p + "evict", to_string(tier.evict)}}) {
            if (values.count(key)) continue;
            config.display[key] = shown;
            config.origin[key] = "default";
        }
    }
    // Secrets from files: show where they came from, never the value.
    for (const auto& [name, node] : config.nodes) {
        std::string p = "nodes." + name + ".";
        if (!values.count(p + "timeout")) {
            config.display[p + "timeout"] = format_duration(node.timeout.count());
            config.origin[p + "timeout"] = "default";
        }
        if (!values.count(p + "qbittorrent.export_timeout")) {
            config.display[p + "qbittorrent.export_timeout"] = format_duration(node.qbittorrent.export_timeout.count());
            config.origin[p + "qbittorrent.export_timeout"] = "default";
        }
        for (const auto& [key, shown] : {std::pair{p + "share_limits", std::string(node.share_limits == ShareLimitsPolicy::none ? "none" : "global")},
                                         std::pair{p + "labels", std::string(node.labels == LabelsPolicy::keep ? "keep" : "drop")}}) {
            if (values.count(key)) continue;
            config.display[key] = shown;
            config.origin[key] = "default";
        }
        if (!node.qbittorrent.password.file.empty()) {
            config.display[p + "qbittorrent.password"] = node.qbittorrent.password.describe("password_file");
            config.origin[p + "qbittorrent.password"] = values.at(p + "qbittorrent.password_file").origin;
        }
        if (!node.syncthing.api_key.file.empty()) {
            config.display[p + "syncthing.api_key"] = node.syncthing.api_key.describe("api_key_file");
            config.origin[p + "syncthing.api_key"] = values.at(p + "syncthing.api_key_file").origin;
        }
    }
    return {};
}

}  // namespace
}  // namespace archctl::config
