// Stage messages on stderr for long work ("generating ... 1.23 s"), silent with --quiet.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace heptane::cli {

class Stage {
public:
    Stage(bool quiet, const std::string& what) : quiet_(quiet)
    {
        if (!quiet_) {
            std::fprintf(stderr, "%s ... ", what.c_str());
            std::fflush(stderr);
        }
    }
    /// Ends the stage line with the elapsed time; returns the seconds.
    double done(const std::string& note = "")
    {
        const double s = seconds();
        if (!quiet_ && !finished_) {
            std::fprintf(stderr, "%s%.2f s\n", note.empty() ? "" : (note + ", ").c_str(), s);
        }
        finished_ = true;
        return s;
    }
    double seconds() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }
    ~Stage()
    {
        if (!quiet_ && !finished_) std::fprintf(stderr, "failed\n");
    }

private:
    bool quiet_;
    bool finished_ = false;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace heptane::cli
