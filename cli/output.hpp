#pragma once
// Output discipline (docs/style.md "Practices" 5): results to stdout, chatter and progress to stderr;
// with --json exactly one JSON document on stdout (written by main.cpp), human text to stderr.

#include <cstdio>
#include <string>

namespace archctl::cli {

class Output {
public:
    Output(bool json, bool quiet, int verbose) : m_json(json), m_quiet(quiet), m_verbose(verbose) {}

    bool json() const { return m_json; }
    bool quiet() const { return m_quiet; }
    int verbose() const { return m_verbose; }

    // A human result (tables, reports). stdout normally; stderr under --json, so stdout holds
    // only the JSON document. Suppressed by -q only under --json.
    void result(const std::string& text);
    // Progress chatter: stderr, suppressed by -q.
    void info(const std::string& text);
    // Only with -v: stderr.
    void debug(const std::string& text);
    // "archctl: warning: ..." on stderr, always.
    void warn(const std::string& text);

private:
    bool m_json;
    bool m_quiet;
    int m_verbose;
};

}  // namespace archctl::cli
