#include <boost/test/unit_test.hpp>

#include "formats/coo/coo_kernels.hpp"
#include "formats/csr/csr_kernels.hpp"
#include "tests/test_common.hpp"

using namespace heptane;

BOOST_AUTO_TEST_CASE(canonicalize_sorts_and_sums_duplicates)
{
    Coo<double> a;
    a.rows = 3;
    a.cols = 4;
    a.row = std::vector<index_t>{2, 0, 2, 0, 1};
    a.col = std::vector<index_t>{1, 3, 1, 0, 2};
    a.val = std::vector<double>{1.0, 2.0, 4.0, 3.0, 5.0};
    canonicalize(a);
    BOOST_TEST(is_canonical(a));
    BOOST_TEST(a.row.host() == (std::vector<index_t>{0, 0, 1, 2}),
               boost::test_tools::per_element());
    BOOST_TEST(a.col.host() == (std::vector<index_t>{0, 3, 2, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(a.val.host() == (std::vector<double>{3.0, 2.0, 5.0, 5.0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(canonicalize_duplicate_policy_error_names_the_entry)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{1, 1};
    a.col = std::vector<index_t>{0, 0};
    a.val = std::vector<double>{1.0, 2.0};
    BOOST_CHECK_EXCEPTION(canonicalize(a, DuplicatePolicy::error), InputError,
                          [](const InputError& e) {
                              return std::string(e.what()).find("(2, 1)") != std::string::npos;
                          });
}

BOOST_AUTO_TEST_CASE(canonicalize_keep_last)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{1, 0, 1};
    a.col = std::vector<index_t>{0, 0, 0};
    a.val = std::vector<double>{1.0, 7.0, 2.0};
    canonicalize(a, DuplicatePolicy::keep_last);
    BOOST_TEST(a.val.host() == (std::vector<double>{7.0, 2.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(canonicalize_rejects_out_of_range_index)
{
    Coo<double> a;
    a.rows = a.cols = 2;
    a.row = std::vector<index_t>{0, 2};
    a.col = std::vector<index_t>{0, 0};
    a.val = std::vector<double>{1.0, 2.0};
    BOOST_CHECK_THROW(canonicalize(a), InputError);
}

BOOST_AUTO_TEST_CASE(csr_round_trip_and_transpose)
{
    auto a = test::random_coo<double>(300, 200, 0, 12, 7);
    auto csr = csr_from_coo(a);
    auto back = to_coo(csr);
    BOOST_TEST(back.row.host() == a.row.host(), boost::test_tools::per_element());
    BOOST_TEST(back.col.host() == a.col.host(), boost::test_tools::per_element());
    BOOST_TEST(back.val.host() == a.val.host(), boost::test_tools::per_element());
    auto tt = transpose(transpose(csr));
    BOOST_TEST(tt.col_idx.host() == csr.col_idx.host(), boost::test_tools::per_element());
    BOOST_TEST(tt.values.host() == csr.values.host(), boost::test_tools::per_element());
}
