#include "tests/test_common.hpp"

#include <algorithm>
#include <numeric>

namespace heptane::test {

template <class T>
Coo<T> random_coo(index_t rows, index_t cols, int min_len, int max_len, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<int> len(min_len, max_len);
    std::uniform_real_distribution<double> val(-1.0, 1.0);
    std::vector<index_t> r, c;
    std::vector<T> v;
    std::vector<index_t> all(cols);
    std::iota(all.begin(), all.end(), 0);
    for (index_t i = 0; i < rows; ++i) {
        const int n = std::min<int>(len(gen), cols);
        // partial Fisher-Yates: n distinct columns
        for (int k = 0; k < n; ++k) {
            std::uniform_int_distribution<index_t> pick(k, cols - 1);
            std::swap(all[k], all[pick(gen)]);
        }
        std::vector<index_t> cs(all.begin(), all.begin() + n);
        std::sort(cs.begin(), cs.end());
        for (index_t cc : cs) {
            r.push_back(i);
            c.push_back(cc);
            v.push_back(static_cast<T>(val(gen)));
        }
    }
    Coo<T> a;
    a.rows = rows;
    a.cols = cols;
    a.row = Array<index_t>(std::move(r));
    a.col = Array<index_t>(std::move(c));
    a.val = Array<T>(std::move(v));
    return a;
}

BlockCsr block_csr_of(const Csr<double>& a, index_t bs)
{
    BlockCsr b;
    b.bs = bs;
    b.block_rows = a.rows / bs;
    b.block_ptr.push_back(0);
    const std::size_t bb = std::size_t(bs) * std::size_t(bs);
    for (index_t ib = 0; ib < b.block_rows; ++ib) {
        std::vector<index_t> cols;  // the block columns of block row ib
        for (index_t r = ib * bs; r < (ib + 1) * bs; ++r)
            for (offset_t k = a.row_ptr.data()[r]; k < a.row_ptr.data()[r + 1]; ++k)
                cols.push_back(a.col_idx.data()[k] / bs);
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        const std::size_t first = b.values.size();
        b.values.resize(first + cols.size() * bb, 0.0);
        for (index_t r = ib * bs; r < (ib + 1) * bs; ++r)
            for (offset_t k = a.row_ptr.data()[r]; k < a.row_ptr.data()[r + 1]; ++k) {
                const index_t c = a.col_idx.data()[k];
                const std::size_t kb =
                    std::size_t(std::lower_bound(cols.begin(), cols.end(), c / bs) - cols.begin());
                b.values[first + kb * bb + std::size_t(c % bs) * std::size_t(bs) +
                         std::size_t(r % bs)] = a.values.data()[k];
            }
        b.block_col.insert(b.block_col.end(), cols.begin(), cols.end());
        b.block_ptr.push_back(index_t(b.block_col.size()));
    }
    return b;
}

template Coo<double> random_coo<double>(index_t, index_t, int, int, unsigned);
template Coo<float> random_coo<float>(index_t, index_t, int, int, unsigned);

}  // namespace heptane::test
