#include "lib/node/wire/job_layout.hpp"

#include <fmt/format.h>

namespace archctl::node {

using nlohmann::json;

const char* method_name(StageMethod m) {
    switch (m) {
        case StageMethod::hardlink: return "hardlink";
        case StageMethod::reflink: return "reflink";
        case StageMethod::copy: return "copy";
    }
    return "copy";
}

std::optional<StageMethod> parse_method(const std::string& name) {
    if (name == "hardlink") return StageMethod::hardlink;
    if (name == "reflink") return StageMethod::reflink;
    if (name == "copy") return StageMethod::copy;
    return std::nullopt;
}

std::string_view to_string(PayloadLayout layout) { return layout == PayloadLayout::sharded ? "sharded" : "flat"; }

std::optional<PayloadLayout> parse_payload_layout(std::string_view name) {
    if (name == "flat") return PayloadLayout::flat;
    if (name == "sharded") return PayloadLayout::sharded;
    return std::nullopt;
}

std::string shard_name(std::uint32_t index) { return std::to_string(index / k_shard_files); }

std::string payload_dir(std::uint32_t index, PayloadLayout layout) {
    return layout == PayloadLayout::sharded ? fmt::format("{}/{}", k_payload_dir, shard_name(index)) : std::string(k_payload_dir);
}

std::string payload_name(std::uint32_t index, PayloadLayout layout) { return fmt::format("{}/{}", payload_dir(index, layout), index); }

std::string aux_path(const std::string& name) { return fmt::format("{}/{}", k_aux_dir, name); }

std::string merge_record_path(const std::string& root, const std::string& job_id) {
    return fmt::format("{}/.archctl/merge-{}.jsonl", root == "/" ? "" : root, job_id);
}

std::string stage_temp_name(std::uint32_t index) { return fmt::format(".{}.part", index); }

std::string merge_temp_name(const std::string& job_id, std::uint32_t index) { return fmt::format(".archctl-merge-{}-{}.tmp", job_id, index); }

Status check_aux_name(const std::string& name) {
    bool ok = !name.empty() && name.size() <= 128 && name.front() != '.';
    for (char c : name) {
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                     c == '_' || c == '-';
        ok = ok && plain;
    }
    if (!ok) return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid auxiliary file name '{}': use [A-Za-z0-9._-], not starting with '.'", name));
    return {};
}

json Manifest::to_json() const {
    json files_json = json::array();
    for (const auto& f : files) {
        files_json.push_back({{"index", f.index}, {"name", payload_name(f.index, layout)}, {"path", f.path}, {"size", f.size},
                              {"xxh3", f.xxh3.empty() ? json(nullptr) : json(f.xxh3)}, {"method", method_name(f.method)}});
    }
    json aux_json = json::array();
    for (const auto& a : aux)
        aux_json.push_back({{"name", fmt::format("{}/{}", k_aux_dir, a.name)}, {"size", a.size}, {"xxh3", a.xxh3}});
    json out = {{"manifest", k_manifest_version}, {"job", job}, {"files", files_json}, {"aux", aux_json}};
    if (layout != PayloadLayout::flat) out["layout"] = to_string(layout);
    return out;
}

std::string Manifest::to_text() const {
    // The layout of dump(1): one space of indent a level, keys in sorted order, strings escaped
    // as the document would escape them.
    auto quoted = [](std::string_view s) { return json(std::string(s)).dump(); };
    std::string out = "{\n \"aux\": [";
    for (std::size_t i = 0; i < aux.size(); ++i) {
        const auto& a = aux[i];
        out += i == 0 ? "\n" : ",\n";
        out += fmt::format("  {{\n   \"name\": {},\n   \"size\": {},\n   \"xxh3\": {}\n  }}", quoted(fmt::format("{}/{}", k_aux_dir, a.name)),
                           a.size, quoted(a.xxh3));
    }
    out += aux.empty() ? "],\n \"files\": [" : "\n ],\n \"files\": [";
    for (std::size_t i = 0; i < files.size(); ++i) {
        const auto& f = files[i];
        out += i == 0 ? "\n" : ",\n";
        out += fmt::format("  {{\n   \"index\": {},\n   \"method\": {},\n   \"name\": {},\n   \"path\": {},\n   \"size\": {},\n   \"xxh3\": {}\n  }}",
                           f.index, quoted(method_name(f.method)), quoted(payload_name(f.index, layout)), quoted(f.path), f.size,
                           f.xxh3.empty() ? std::string("null") : quoted(f.xxh3));
    }
    out += files.empty() ? "],\n" : "\n ],\n";
    out += fmt::format(" \"job\": {},\n", quoted(job));
    if (layout != PayloadLayout::flat) out += fmt::format(" \"layout\": {},\n", quoted(to_string(layout)));
    out += fmt::format(" \"manifest\": {}\n}}\n", k_manifest_version);
    return out;
}

Result<Manifest> Manifest::from_json(const json& j) {
    try {
        if (j.at("manifest").get<int>() != k_manifest_version)
            return Error(ErrorCode::CORRUPT, fmt::format("unsupported manifest version {}", j.at("manifest").get<int>()));
        Manifest m;
        m.job = j.at("job").get<std::string>();
        auto layout = parse_payload_layout(j.value("layout", "flat"));
        if (!layout) return Error(ErrorCode::CORRUPT, "manifest names an unknown payload layout");
        m.layout = *layout;
        for (const auto& f : j.at("files")) {
            ManifestFile mf;
            mf.index = f.at("index").get<std::uint32_t>();
            mf.path = f.at("path").get<std::string>();
            mf.size = f.at("size").get<std::uint64_t>();
            if (f.at("xxh3").is_string()) mf.xxh3 = f.at("xxh3").get<std::string>();
            auto method = parse_method(f.at("method").get<std::string>());
            if (!method) return Error(ErrorCode::CORRUPT, "manifest names an unknown staging method");
            mf.method = *method;
            m.files.push_back(std::move(mf));
        }
        for (const auto& a : j.at("aux")) {
            std::string name = a.at("name").get<std::string>();
            std::string prefix = fmt::format("{}/", k_aux_dir);
            if (!name.starts_with(prefix)) return Error(ErrorCode::CORRUPT, fmt::format("manifest aux name '{}' is not below a/", name));
            ManifestAux ma{name.substr(prefix.size()), a.at("size").get<std::uint64_t>(), a.value("xxh3", "")};
            ARCHCTL_TRY_STATUS(check_aux_name(ma.name));
            m.aux.push_back(std::move(ma));
        }
        return m;
    } catch (const json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("invalid manifest: {}", e.what()));
    }
}

}  // namespace archctl::node
