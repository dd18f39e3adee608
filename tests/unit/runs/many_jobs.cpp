#include "tests/unit/runs/many_jobs.hpp"

#include <stdexcept>

namespace archctl::test {

namespace {

const char* const k_names[] = {"first", "second", "third", "fourth"};

}  // namespace

ManyJobs::ManyJobs(std::size_t count) {
    if (count > std::size(k_names)) throw std::invalid_argument("ManyJobs: at most 4 jobs");
    for (std::size_t i = 0; i < count; ++i) {
        names.emplace_back(k_names[i]);
        fixtures.push_back(std::make_unique<TransferFixture>());
    }
}

TransferFixture& ManyJobs::job(const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return *fixtures[i];
    throw std::invalid_argument("ManyJobs: no job " + name);
}

runs::RunJob ManyJobs::runner() {
    return [this](const std::string& name, const jobs::Budgets& budgets) {
        given.push_back(budgets);
        driven.push_back(name);
        TransferFixture& f = job(name);
        jobs::JobIo io;
        io.log = [&f](const std::string& line) { f.log.push_back(line); };
        io.clock = &clock;
        io.test = f.test;
        jobs::Driver driver(f.config, f.state, f.nodes, io);
        jobs::RunResult r = driver.run(f.job_id, budgets);
        if (after) after(name);
        return r;
    };
}

std::string ManyJobs::state_of(const std::string& name) { return job(name).ledger().value("state", ""); }

}  // namespace archctl::test
