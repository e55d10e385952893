# SPDX-License-Identifier: MIT
# Reference fits of Eq. (5) with lme4 for tests/test_hierarchical.py.
# Usage (from this folder): Rscript fit_lme4.R   -> lme4_reference.json
# Model: glmer(y ~ h + (1 + h || cell), family = binomial, weights = w),
# default control (nAGQ = 1: Laplace approximation).
suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})
out <- list(
  R_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  Matrix_version = as.character(packageVersion("Matrix")),
  formula = "y ~ h + (1 + h || cell), family = binomial, weights = w",
  datasets = list()
)
for (name in c("few_big", "many_small", "one_class", "mid")) {
  d <- read.csv(paste0(name, ".csv"))
  d$cell <- factor(d$cell)
  fit <- glmer(y ~ h + (1 + h || cell), family = binomial, data = d, weights = w)
  vc <- as.data.frame(VarCorr(fit))
  re <- ranef(fit)$cell
  out$datasets[[name]] <- list(
    n = nrow(d),
    fixef = unname(fixef(fit)),
    sd = c(vc$sdcor[vc$var1 == "(Intercept)"], vc$sdcor[vc$var1 == "h"]),
    ranef_cells = as.integer(as.character(rownames(re))),
    ranef_intercept = unname(re[["(Intercept)"]]),
    ranef_slope = unname(re[["h"]]),
    deviance = deviance(fit),
    loglik = as.numeric(logLik(fit)),
    fitted = unname(fitted(fit)),
    singular = isSingular(fit),
    messages = c(fit@optinfo$conv$lme4$messages, fit@optinfo$warnings)
  )
}
write_json(out, "lme4_reference.json", digits = NA, auto_unbox = TRUE, pretty = TRUE)
