// Writing a file so that it is either the old one or the complete new one: AtomicFile writes
// PATH.tmp and renames it to PATH on commit(). Used by every writer of files (Matrix Market,
// PETSc binary).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "core/error.hpp"

namespace heptane {

// Writes PATH.tmp and renames it to PATH on commit(); anything short of commit() removes
// PATH.tmp, so PATH is either the old file or the complete new one.
class AtomicFile {
public:
    explicit AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp")
    {
        namespace fs = std::filesystem;
        const fs::path dir = fs::path(path_).parent_path();
        std::error_code ec;
        if (!dir.empty() && !fs::is_directory(dir, ec))
            HEPTANE_THROW(IoError, "cannot write '" << path_ << "': the directory '" << dir.string()
                                                    << "' does not exist");
        f_ = std::fopen(tmp_.c_str(), "wb");
        if (!f_) HEPTANE_THROW(IoError, "cannot create '" << tmp_ << "': " << std::strerror(errno));
    }
    ~AtomicFile()
    {
        if (f_) std::fclose(f_);
        if (!committed_) std::remove(tmp_.c_str());
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const char* p, std::size_t n)
    {
        if (n > 0 && std::fwrite(p, 1, n, f_) != n)
            HEPTANE_THROW(IoError, "cannot write '" << tmp_ << "': " << std::strerror(errno));
    }
    void write(const std::string& s) { write(s.data(), s.size()); }
    void commit()
    {
        const bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
        const int err = errno;
        const bool closed = std::fclose(f_) == 0;
        f_ = nullptr;
        if (!ok || !closed)
            HEPTANE_THROW(IoError, "cannot write '" << tmp_ << "': " << std::strerror(err));
        if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
            HEPTANE_THROW(IoError, "cannot rename '" << tmp_ << "' to '" << path_
                                                     << "': " << std::strerror(errno));
        committed_ = true;
    }

private:
    std::string path_, tmp_;
    std::FILE* f_ = nullptr;
    bool committed_ = false;
};

}  // namespace heptane
