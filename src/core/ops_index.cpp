#include "core/front.h"

namespace wick {

Tensor Tensor::index_select(const Tensor& ids, int64_t dim) const { throw UnsupportedError("[index_select] front end not written yet"); }
Tensor Tensor::gather(const Tensor& ids, int64_t dim) const { throw UnsupportedError("[gather] front end not written yet"); }
Tensor Tensor::scatter(const Tensor& ids, const Tensor& src, int64_t dim) const { throw UnsupportedError("[scatter] front end not written yet"); }
Tensor Tensor::scatter_add(const Tensor& ids, const Tensor& src, int64_t dim) const { throw UnsupportedError("[scatter_add] front end not written yet"); }
Tensor Tensor::index_add(const Tensor& ids, const Tensor& src, int64_t dim) const { throw UnsupportedError("[index_add] front end not written yet"); }
Tensor Tensor::matmul(const Tensor& o) const { throw UnsupportedError("[matmul] front end not written yet"); }
Tensor cat(const std::vector<Tensor>&, int64_t) { throw UnsupportedError("[cat] not written yet"); }
void copy2d(const Tensor&, Tensor&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) { throw UnsupportedError("[copy2d] not written yet"); }

}  // namespace wick
