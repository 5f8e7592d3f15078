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

template Coo<double> random_coo<double>(index_t, index_t, int, int, unsigned);
template Coo<float> random_coo<float>(index_t, index_t, int, int, unsigned);

}  // namespace heptane::test
