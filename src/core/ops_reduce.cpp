#include "core/front.h"

namespace wick {

Tensor Tensor::sum(const Dims& dims, bool keepdim) const { throw UnsupportedError("[sum] front end not written yet"); }
Tensor Tensor::mean(const Dims& dims, bool keepdim) const { throw UnsupportedError("[mean] front end not written yet"); }
Tensor Tensor::min(const Dims& dims, bool keepdim) const { throw UnsupportedError("[min] front end not written yet"); }
Tensor Tensor::max(const Dims& dims, bool keepdim) const { throw UnsupportedError("[max] front end not written yet"); }
Tensor Tensor::argmin(const Dims& dims, bool keepdim) const { throw UnsupportedError("[argmin] front end not written yet"); }
Tensor Tensor::argmax(const Dims& dims, bool keepdim) const { throw UnsupportedError("[argmax] front end not written yet"); }
Tensor Tensor::softmax(int64_t dim) const { throw UnsupportedError("[softmax] front end not written yet"); }
Tensor Tensor::log_softmax(int64_t dim) const { throw UnsupportedError("[log_softmax] front end not written yet"); }
Tensor Tensor::rms_norm(const Tensor& weight, double eps) const { throw UnsupportedError("[rms_norm] front end not written yet"); }
Tensor Tensor::layer_norm(const Tensor& weight, const Tensor& bias, double eps) const { throw UnsupportedError("[layer_norm] front end not written yet"); }
Tensor Tensor::cumsum(int64_t dim) const { throw UnsupportedError("[cumsum] front end not written yet"); }
std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { throw UnsupportedError("[sort] front end not written yet"); }
Tensor Tensor::argsort(int64_t dim, bool descending) const { throw UnsupportedError("[argsort] front end not written yet"); }

}  // namespace wick
