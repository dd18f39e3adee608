#pragma once
// Content layouts (pure): where qBittorrent puts a torrent's files below its save path.
//
// qBittorrent's `name` of a file (torrents/files) is its path below the save path on disk. It
// differs from the metainfo path (root folder first) for three reasons that are not renames:
//   - the content layout chosen at add: Original (as the metainfo says), NoSubfolder (a
//     multi-file torrent without its root folder), Subfolder (a single-file torrent placed in
//     a folder qBittorrent names after the file, its extension removed);
//   - libtorrent's sanitizing of each path element (an element of 240 bytes or more is cut,
//     keeping a short extension; see `disk_element`);
// and one that is: a file renamed in qBittorrent (its Content tab, torrents/renameFile).
//
// A placement has one layout. `infer_layout` picks the one that explains most files' names;
// `PlacementLayout::renamed` names the files it does not explain, which are real renames.
//
//   auto layout = infer_layout(meta_paths, view.names);
//   layout.disk_path(i);     // where file i is on that node's disk
//   layout.renamed(i);       // qB's name is not what the layout gives: a rename

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace archctl::torrent {

enum class ContentLayout { original, subfolder, no_subfolder };
// "Original", "Subfolder", "NoSubfolder": qBittorrent's own names (torrents/add contentLayout).
std::string to_string(ContentLayout layout);
// The inverse; false for an unknown name.
bool parse_content_layout(std::string_view name, ContentLayout& out);

// One metainfo path element as libtorrent writes it on disk: control characters and invalid
// UTF-8 become '_', direction-changing characters and separators are dropped, and an element
// that reaches 240 bytes is cut there, keeping its extension when a '.' is among its last 9
// bytes. "." and ".." elements give "" (dropped).
[[nodiscard]] std::string disk_element(std::string_view element);
// A metainfo path ("root/dir/file") with each element as libtorrent writes it.
[[nodiscard]] std::string disk_path_of(std::string_view metainfo_path);

// The folder qBittorrent makes for a single-file torrent added with Subfolder: the file name
// without its extension. True when `folder` is such a name for `file_name` (qBittorrent's
// extension rules know multi-part extensions such as ".tar.gz", so any cut at a '.' counts).
[[nodiscard]] bool is_subfolder_name(std::string_view folder, std::string_view file_name);

// The layout of one placement and what it means for each file.
struct PlacementLayout {
    ContentLayout layout = ContentLayout::original;
    std::string folder;                 // Subfolder: the folder qBittorrent made ("" otherwise)
    std::vector<std::string> expected;  // by index: the on-disk path the layout gives ("" unknown)
    std::vector<std::string> names;     // by index: qBittorrent's names ("" unknown)

    // Where file `index` is on disk below the save path: qBittorrent's name when it has one,
    // else the layout's path.
    [[nodiscard]] std::string disk_path(std::uint32_t index) const;
    // qBittorrent names file `index` other than the layout explains: renamed there.
    [[nodiscard]] bool renamed(std::uint32_t index) const;
    // The path the layout gives file `index` ("" when unknown).
    [[nodiscard]] std::string expected_path(std::uint32_t index) const;
};

// The on-disk path of metainfo path `path` under `layout` (`folder`: Subfolder's folder; when
// empty, the file name without its last extension).
[[nodiscard]] std::string layout_path(ContentLayout layout, const std::string& folder, std::string_view path);

// The layout that explains most of `names` (qBittorrent's names by index) for `meta_paths`
// (metainfo paths by index; "" for an index not known). A metainfo path without '/' is a
// single-file torrent's. Ties prefer Original, then NoSubfolder. No names: Original.
[[nodiscard]] PlacementLayout infer_layout(const std::vector<std::string>& meta_paths, const std::vector<std::string>& names);

// `meta_paths` placed with a known layout (a new target added with the source's layout).
[[nodiscard]] PlacementLayout apply_layout(const std::vector<std::string>& meta_paths, ContentLayout layout, const std::string& folder);

}  // namespace archctl::torrent
