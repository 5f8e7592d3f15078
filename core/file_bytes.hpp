// The bytes of a file, for readers that parse from memory: mapped when it is a regular file,
// read otherwise (pipes, /dev/stdin). Used by the Matrix Market and PETSc binary readers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace heptane {

class FileBytes {
public:
    /// Throws IoError (naming the file and the reason) when it cannot be opened or read, or
    /// is a directory.
    explicit FileBytes(const std::string& path);
    ~FileBytes();
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;
    std::string_view view() const
    {
        return map_ ? std::string_view(static_cast<const char*>(map_), size_)
                    : std::string_view(copy_);
    }

private:
    void* map_ = nullptr;
    std::size_t size_ = 0;
    std::string copy_;
};

}  // namespace heptane
