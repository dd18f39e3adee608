#pragma once
// JSON documents written to files as they are serialized: a job's definition, ledger or placement
// record at 100,000 files is tens of MB of text, never held whole (nor copied to add a newline).
// The bytes are exactly doc.dump(indent) followed by a newline.
//
//   ARCHCTL_TRY_STATUS(write_json_atomic(path, ledger, 2));     // replace durably (AtomicFile)
//   ARCHCTL_TRY_STATUS(write_json_exclusive(path, definition, 2));  // create only (EXISTS)

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"

namespace archctl {

// `doc` as doc.dump(indent) (indent < 0: one line) and a newline, handed to `write` at most a
// MiB at a time; stops at the first error `write` returns. A string that is not UTF-8 throws, as
// dump() does.
[[nodiscard]] Status write_json_text(const nlohmann::json& doc, int indent, const std::function<Status(std::string_view)>& write);

// write_file_atomic and write_file_exclusive (lib/base/fs.hpp) of `doc`'s text.
[[nodiscard]] Status write_json_atomic(const std::string& path, const nlohmann::json& doc, int indent, unsigned mode = 0644);
[[nodiscard]] Status write_json_exclusive(const std::string& path, const nlohmann::json& doc, int indent, unsigned mode = 0644);

}  // namespace archctl
