// FileBytes (core/file_bytes.hpp).
#include "core/file_bytes.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace heptane {

FileBytes::FileBytes(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) HEPTANE_THROW(IoError, "cannot open '" << path << "': " << std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        HEPTANE_THROW(IoError, "cannot read '" << path << "': " << std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        HEPTANE_THROW(IoError, "cannot read '" << path << "': it is a directory");
    }
    // Small files are read: mapping, the page faults and unmapping cost more than the copy
    // there (a 1 KB Matrix Market file: 10 of its 21 µs went to the kernel).
    constexpr off_t map_from = off_t(256) << 10;
    if (S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < map_from) {
        // straight into the string, the st_size bytes fstat saw (as the mapping would take):
        // one read, no end-of-file read after it
        copy_.resize(std::size_t(st.st_size));
        std::size_t got = 0;
        while (got < copy_.size()) {
            const ssize_t n = ::read(fd, &copy_[got], copy_.size() - got);
            if (n == 0) break;  // shorter than fstat said (truncated meanwhile): what is there
            if (n < 0) {
                if (errno == EINTR) continue;
                const int err = errno;
                ::close(fd);
                HEPTANE_THROW(IoError, "cannot read '" << path << "': " << std::strerror(err));
            }
            got += std::size_t(n);
        }
        copy_.resize(got);
        ::close(fd);
        return;
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        size_ = std::size_t(st.st_size);
        void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            map_ = m;
            ::madvise(map_, size_, MADV_SEQUENTIAL | MADV_WILLNEED);
            ::close(fd);
            return;
        }
        size_ = 0;
    }
    // not mappable, or no size known (a pipe): read it to the end
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            HEPTANE_THROW(IoError, "cannot read '" << path << "': " << std::strerror(err));
        }
        copy_.append(buf, std::size_t(n));
    }
    ::close(fd);
}

FileBytes::~FileBytes()
{
    if (map_) ::munmap(map_, size_);
}

}  // namespace heptane
