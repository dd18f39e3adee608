#include "tests/unit/torrent/torrent_builder.hpp"

#include <fstream>

#include "lib/torrent/merkle.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::torrent::test {

using bencode::Value;

std::string random_bytes(std::size_t n, std::uint32_t seed) {
    std::string out(n, '\0');
    std::uint32_t x = seed * 2654435761u + 1;
    for (auto& c : out) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = static_cast<char>(x & 0xff);
    }
    return out;
}

namespace {

std::vector<Sha256Digest> leaves_of(std::string_view data) {
    std::vector<Sha256Digest> leaves;
    for (std::size_t i = 0; i < data.size(); i += 16384) leaves.push_back(sha256(data.substr(i, 16384)));
    return leaves;
}

Value path_list(const std::vector<std::string>& rel) {
    Value list = Value::list();
    for (const auto& e : rel) list.mutable_list().push_back(Value::string(e));
    return list;
}

}  // namespace

Value MemTorrent::build() const {
    const auto l = static_cast<std::size_t>(piece_length);
    Value info = Value::dict();
    info.set("name", Value::string(name));
    info.set("piece length", Value::integer(piece_length));
    Value top = Value::dict();
    Value layers = Value::dict();
    if (kind != MemKind::v1) {
        Value tree = Value::dict();
        for (const auto& f : files) {
            Value props = Value::dict();
            if (!f.attr.empty()) props.set("attr", Value::string(f.attr));
            props.set("length", Value::integer(static_cast<std::int64_t>(f.data.size())));
            if (!f.data.empty()) {
                auto leaves = leaves_of(f.data);
                Sha256Digest root{};
                if (f.data.size() <= l) {
                    root = merkle::small_file_root(leaves);
                } else {
                    std::vector<Sha256Digest> layer;
                    std::string layer_bytes;
                    std::size_t k = l / 16384;
                    for (std::size_t i = 0; i < leaves.size(); i += k) {
                        std::vector<Sha256Digest> part(leaves.begin() + static_cast<std::ptrdiff_t>(i),
                                                       leaves.begin() + static_cast<std::ptrdiff_t>(std::min(i + k, leaves.size())));
                        layer.push_back(merkle::piece_hash(part, piece_length));
                        layer_bytes += digest_bytes(layer.back());
                    }
                    root = merkle::root_from_layer(layer, piece_length);
                    layers.set(digest_bytes(root), Value::string(layer_bytes));
                }
                props.set("pieces root", Value::string(digest_bytes(root)));
            }
            Value* node = &tree;
            std::vector<std::string> rel = single_file ? std::vector<std::string>{name} : f.rel;
            for (const auto& e : rel) {
                Value* child = nullptr;
                for (auto& entry : node->mutable_dict())
                    if (entry.key == e) child = &entry.value;
                node = child ? child : &node->set(e, Value::dict());
            }
            node->set("", std::move(props));
        }
        info.set("file tree", std::move(tree));
        info.set("meta version", Value::integer(2));
    }
    if (kind != MemKind::v2) {
        std::string space;
        Value list = Value::list();
        for (std::size_t i = 0; i < files.size(); ++i) {
            const auto& f = files[i];
            space += f.data;
            Value entry = Value::dict();
            if (!f.attr.empty()) entry.set("attr", Value::string(f.attr));
            entry.set("length", Value::integer(static_cast<std::int64_t>(f.data.size())));
            entry.set("path", path_list(f.rel));
            list.mutable_list().push_back(std::move(entry));
            bool last = i + 1 == files.size();
            if (kind == MemKind::hybrid && !single_file && !f.data.empty() && space.size() % l != 0 && (!last || tail_pad)) {
                std::size_t pad = l - space.size() % l;
                space.append(pad, '\0');
                Value p = Value::dict();
                p.set("attr", Value::string("p"));
                p.set("length", Value::integer(static_cast<std::int64_t>(pad)));
                p.set("path", path_list({".pad", std::to_string(pad)}));
                list.mutable_list().push_back(std::move(p));
            }
        }
        std::string pieces;
        for (std::size_t i = 0; i < space.size(); i += l) pieces += digest_bytes(sha1(std::string_view(space).substr(i, l)));
        info.set("pieces", Value::string(pieces));
        if (single_file) info.set("length", Value::integer(static_cast<std::int64_t>(files.front().data.size())));
        else info.set("files", std::move(list));
    }
    top.set("info", std::move(info));
    if (!layers.as_dict().empty()) top.set("piece layers", std::move(layers));
    return top;
}

void MemTorrent::write_payload(const std::filesystem::path& save_path) const {
    for (const auto& f : files) {
        std::filesystem::path p = single_file ? save_path / name : save_path / name;
        if (!single_file)
            for (const auto& e : f.rel) p /= e;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(f.data.data(), static_cast<std::streamsize>(f.data.size()));
    }
}

}  // namespace archctl::torrent::test
