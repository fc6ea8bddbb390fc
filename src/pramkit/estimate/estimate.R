# The original frequency table of a PRAM-released file, estimated in R.
#
# Written by `pramkit estimate --emit r` (or --emit-r); it needs R and the package jsonlite, and for a
# survey file (weights_column set below) the package survey.
# It reads the released file (CSV) and its manifest (JSON) and computes what
# `pramkit estimate` computes with its default estimator: the unbiased moment
# estimator t = (M_1^T)^-1 (x) (M_2^T)^-1 (x) ... u of the original counts from
# the released counts u (Ruiz and Domingo-Ferrer, appendix A.1; Cator,
# Hensbergen and Rozenholc, estimator (4)), its standard errors, and each cell's
# share of its group (of all records without `by`) with delta-method standard
# errors.  Columns the manifest does not perturb are taken as they are.
#
# With weights_column (and optionally strata_column and psu_column, PSUs nested in the strata) the
# released counts u are weighted and their covariance is survey's with-replacement linearisation
# (svydesign, svytotal: the ultimate-cluster estimator over the PSU totals), which covers the design's
# variance and PRAM's together; the totals' covariance is then A V A^T with A = (M^T)^-1, and a
# record with a missing value adds nothing to any cell but stays in its stratum and PSU.
#
# Run:   Rscript THIS_FILE [OUT.csv]
# It prints the table; with OUT.csv it also writes it there, numbers in full precision.
# Change the settings below to tabulate other columns of the same release.

# ---- settings (written by pramkit) ----
@SETTINGS@
# ---- end of settings ----

suppressPackageStartupMessages(library(jsonlite))

# One value spelled two ways (surrounding white space, or numbers such as 3 and 3.0): pramkit
# refuses to guess which spelling is meant, and so does this script.
number_pattern <- "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
number_key <- function(v) ifelse(v == round(v) & abs(v) < 2^53, sprintf("%.0f", v), sprintf("%.17g", v))
spelling_key <- function(x) {
  x <- trimws(x, whitespace = "[\\h\\v]")
  if (all(grepl(number_pattern, x, perl = TRUE))) number_key(as.numeric(x)) else x
}
label_text <- function(label) {
  if (is.numeric(label)) number_key(label) else as.character(label)
}

# A matrix of the manifest, dense, from its form.
dense_matrix <- function(entry, size) {
  form <- if (is.null(entry$form)) "dense" else entry$form
  if (form == "dense") {
    return(matrix(unlist(entry$matrix), nrow = size, byrow = TRUE))
  }
  if (form == "diagonal") {
    q <- unlist(entry$q)
    w <- unlist(entry$w)
    m <- matrix(w, nrow = size, ncol = size)
    diag(m) <- q
    return(m)
  }
  if (form == "truncated_geometric") {
    a <- exp(-entry$rate)
    k <- 0:(size - 1)
    m <- outer(k, k, function(x, j) (1 - a) / (1 + a) * a^abs(x - j))
    m[, 1] <- a^k / (1 + a)
    m[, size] <- a^(size - 1 - k) / (1 + a)
    return(m)
  }
  if (form == "blocks") {
    m <- matrix(0, nrow = size, ncol = size)
    for (block in entry$blocks) {
      members <- unlist(block$members) + 1
      m[members, members] <- dense_matrix(block, length(members))
    }
    return(m)
  }
  if (form == "exponential") {
    d <- distances(entry$distances, size)
    w <- exp(d * (-entry$rate / 2))
    return(w / rowSums(w))
  }
  stop(sprintf("a matrix in form '%s': this script reads the forms dense, diagonal, blocks, ", form),
       "truncated_geometric and exponential; use pramkit estimate", call. = FALSE)
}

# The public distances of an exponential mechanism: a matrix, or one point per category (ordinal:
# |p_i - p_j|; euclidean; haversine: great-circle km between (lat, lon) degrees, made exactly symmetric).
distances <- function(dist, size) {
  if (!is.null(dist$matrix)) return(matrix(unlist(dist$matrix), nrow = size, byrow = TRUE))
  p <- matrix(unlist(dist$points), nrow = size, byrow = TRUE)
  if (dist$kind == "ordinal") return(abs(outer(p[, 1], p[, 1], "-")))
  if (dist$kind == "euclidean") return(sqrt(outer(p[, 1], p[, 1], "-")^2 + outer(p[, 2], p[, 2], "-")^2))
  if (dist$kind == "haversine") {
    km <- function(lat1, lon1, lat2, lon2) {
      p1 <- lat1 * pi / 180
      p2 <- lat2 * pi / 180
      h <- sin((p2 - p1) / 2)^2 + cos(p1) * cos(p2) * sin((lon2 - lon1) * pi / 180 / 2)^2
      2 * 6371.0088 * asin(sqrt(pmin(pmax(h, 0), 1)))
    }
    lat1 <- matrix(p[, 1], size, size)
    lon1 <- matrix(p[, 2], size, size)
    d <- pmax(km(lat1, lon1, t(lat1), t(lon1)), km(t(lat1), t(lon1), lat1, lon1))
    diag(d) <- 0
    return(d)
  }
  stop(sprintf("distances of kind '%s': use pramkit estimate", dist$kind), call. = FALSE)
}

# y[..., k, ...] = sum_l a[k, l] x[..., l, ...] along one axis of an array.
along <- function(x, a, axis) {
  d <- dim(x)
  perm <- c(axis, seq_along(d)[-axis])
  moved <- aperm(x, perm)
  flat <- a %*% matrix(moved, nrow = d[axis])
  aperm(array(flat, dim = c(nrow(a), d[-axis])), order(perm))
}
contract <- function(x, mats) {
  for (axis in seq_along(mats)) {
    if (!is.null(mats[[axis]])) x <- along(x, mats[[axis]], axis)
  }
  x
}

manifest <- fromJSON(manifest_file, simplifyVector = FALSE)
perturbed <- list()
for (v in manifest$variables) perturbed[[v$name]] <- v

axes <- c(vars, by)
# read as UTF-8 whatever the locale (a byte-order mark is dropped from the first name), or re-encoded from
# the file's encoding
data <- if (file_encoding == "UTF-8") {
  read.csv(released_file, colClasses = "character", na.strings = c("", na_strings), check.names = FALSE,
           encoding = "UTF-8", strip.white = FALSE, sep = csv_sep)
} else {
  read.csv(released_file, colClasses = "character", na.strings = c("", na_strings), check.names = FALSE,
           fileEncoding = file_encoding, strip.white = FALSE, sep = csv_sep)
}
names(data)[1] <- sub("^\ufeff", "", names(data)[1])
absent <- setdiff(axes, names(data))
if (length(absent) > 0) {
  stop(sprintf("column(s) %s are not in %s", paste(absent, collapse = ", "), released_file), call. = FALSE)
}

levels_of <- list()
codes <- list()
inverse <- list()
matrices <- list()
condition <- 1
for (a in axes) {
  values <- data[[a]]
  v <- perturbed[[a]]
  if (!is.null(v)) {
    if (length(v$columns) != 1 || length(v$given) > 0) {
      stop(sprintf("'%s' is perturbed jointly or within strata: use pramkit estimate", a), call. = FALSE)
    }
    labels <- vapply(v$categories, label_text, "")
    m <- dense_matrix(v, length(labels))
    s <- svd(m)$d
    if (min(s) <= max(s) * length(s) * .Machine$double.eps) {
      stop(sprintf("the matrix of '%s' is singular: use pramkit estimate (maximum likelihood)", a), call. = FALSE)
    }
    condition <- condition * max(s) / min(s)
    inverse[[a]] <- solve(m)
    matrices[[a]] <- m
    outside <- !is.na(values) & !(values %in% labels)
    if (any(outside)) {
      stop(sprintf("column '%s', row %d: '%s' is not a category of its matrix (as the manifest writes it)", a,
                   which(outside)[1], values[which(outside)[1]]), call. = FALSE)
    }
  } else {
    labels <- unique(values[!is.na(values)])
    if (length(labels) == 0) stop(sprintf("column '%s' has no non-missing value", a), call. = FALSE)
    if (anyDuplicated(spelling_key(labels))) {
      stop(sprintf("column '%s' spells one value two ways (white space or numeric spelling)", a), call. = FALSE)
    }
    numeric <- all(grepl(number_pattern, labels, perl = TRUE))
    labels <- if (numeric) labels[order(as.numeric(labels))] else sort(labels, method = "radix")
  }
  levels_of[[a]] <- labels
  codes[[a]] <- factor(values, levels = labels)
}
if (condition > max_condition) {
  stop(sprintf("the matrices are badly conditioned (condition number %.3g): use pramkit estimate", condition),
       call. = FALSE)
}

complete <- Reduce(`&`, lapply(codes, function(f) !is.na(f)))
dropped <- sum(!complete)
dims <- vapply(axes, function(a) length(levels_of[[a]]), 1L)
inner <- seq_along(vars)
groups <- setdiff(seq_along(axes), inner)
cells <- arrayInd(seq_len(prod(dims)), dims)
if (is.null(weights_column)) {
  u <- table(lapply(codes, function(f) f[complete]))
  u <- array(as.numeric(u), dim = dim(u))
  n <- sum(u)
  if (n == 0) stop("every row has a missing value in the columns tabulated", call. = FALSE)

  w <- lapply(axes, function(a) inverse[[a]])            # W = M^-1 on a perturbed axis, NULL elsewhere
  wt <- lapply(w, function(x) if (is.null(x)) NULL else t(x))
  sq <- lapply(wt, function(x) if (is.null(x)) NULL else x * x)

  estimate <- contract(u, wt)                              # t = (M^T)^-1 u, axis by axis
  second <- contract(u, sq)                                # sum_d A[c, d]^2 u_d
  cell_var <- if (variance == "multinomial") second - estimate^2 / n else second - estimate
  se <- sqrt(pmax(cell_var, 0))

  # Shares within the groups of `by` (the last axes), their delta-method variances.
  if (length(groups) > 0) {
    group_index <- cells[, groups, drop = FALSE]
    total <- array(apply(estimate, groups, sum), dim = dim(estimate)[groups])[group_index]
    g <- contract(array(apply(u, groups, sum), dim = dim(u)[groups]), sq[groups])[group_index]
  } else {
    total <- rep(sum(estimate), length(estimate))
    g <- rep(n, length(estimate))
  }
  x <- contract(u, lapply(seq_along(axes), function(i) if (i %in% groups) sq[[i]] else wt[[i]]))
  share <- ifelse(total != 0, as.vector(estimate) / total, NaN)
  num <- as.vector(second) - 2 * share * as.vector(x) + share^2 * g
  if (variance == "pram") num <- num - as.vector(estimate) * (1 - share)
  share_se <- ifelse(total != 0, sqrt(pmax(num, 0) / total^2), NaN)
} else {
  suppressPackageStartupMessages(library(survey))
  index <- rep(0, nrow(data))                            # each row's cell, R's array order (first axis fastest)
  stride <- 1
  for (i in seq_along(axes)) {
    index <- index + (as.integer(codes[[axes[i]]]) - 1) * stride
    stride <- stride * dims[i]
  }
  y <- matrix(0, nrow(data), prod(dims))                 # indicators of the released cells, 0 when missing
  y[cbind(which(complete), index[complete] + 1)] <- 1
  weight <- suppressWarnings(as.numeric(data[[weights_column]]))
  bad <- is.na(weight) | !is.finite(weight) | weight < 0
  if (any(bad)) {
    stop(sprintf("column '%s', row %d: a weight must be a finite number >= 0", weights_column, which(bad)[1]),
         call. = FALSE)
  }
  frame <- data.frame(w = weight, s = 1, p = seq_len(nrow(data)))
  if (!is.null(strata_column)) frame$s <- data[[strata_column]]
  if (!is.null(psu_column)) frame$p <- data[[psu_column]]
  for (role in c("s", "p")) {
    if (anyNA(frame[[role]])) {
      stop(sprintf("column '%s' has a missing value at row %d", c(s = strata_column, p = psu_column)[[role]],
                   which(is.na(frame[[role]]))[1]), call. = FALSE)
    }
  }
  # "center": a lone PSU's total measured from the mean of all PSU totals, added below (survey's "adjust"
  # centres on the mean of the records instead, which differs when a PSU holds several records)
  options(survey.lonely.psu = c(error = "fail", certainty = "certainty", center = "certainty")[[single_psu]])
  design <- svydesign(ids = ~p, strata = ~s, weights = ~w, data = frame, nest = TRUE)
  totals <- svytotal(y, design)
  released_cov <- unclass(vcov(totals))
  if (single_psu == "center") {
    unit <- paste(frame$s, frame$p, sep = "\r")
    psu_totals <- rowsum(y * frame$w, unit)              # one row per PSU, in sorted order of unit
    stratum_of <- tapply(as.character(frame$s), unit, function(x) x[1])[rownames(psu_totals)]
    lone <- stratum_of %in% names(which(table(stratum_of) == 1))
    d <- sweep(psu_totals[lone, , drop = FALSE], 2, colMeans(psu_totals))
    released_cov <- released_cov + crossprod(d)
  }
  u <- array(as.vector(coef(totals)), dim = dims)
  n <- sum(u)
  if (n == 0) stop("every weight of the rows tabulated is zero", call. = FALSE)
  full <- matrix(1, 1, 1)                                # M of the table, cells in R's array order
  for (a in rev(axes)) full <- kronecker(full, if (is.null(matrices[[a]])) diag(length(levels_of[[a]])) else matrices[[a]])
  a_t <- solve(t(full))
  estimate <- array(a_t %*% as.vector(u), dim = dims)
  cov <- a_t %*% released_cov %*% t(a_t)
  se <- sqrt(pmax(diag(cov), 0))
  group <- if (length(groups) > 0) apply(cells[, groups, drop = FALSE], 1, paste, collapse = ",") else rep("", length(u))
  same <- outer(group, group, "==") * 1
  total <- as.vector(same %*% as.vector(estimate))
  share <- ifelse(total != 0, as.vector(estimate) / total, NaN)
  jac <- (diag(length(u)) - share * same) / total
  share_var <- rowSums((jac %*% cov) * jac)
  share_se <- ifelse(is.finite(share_var), sqrt(pmax(share_var, 0)), NaN)
}

z <- qnorm(0.5 + confidence / 2)
result <- data.frame(lapply(seq_along(axes), function(i) levels_of[[axes[i]]][cells[, i]]),
                     stringsAsFactors = FALSE)
names(result) <- axes
result$released <- as.vector(u)
result$estimate <- as.vector(estimate)
result$se <- as.vector(se)
result$ci_low <- result$estimate - z * result$se
result$ci_high <- result$estimate + z * result$se
result$proportion <- share
result$proportion_se <- share_se
result$proportion_ci_low <- share - z * share_se
result$proportion_ci_high <- share + z * share_se

how <- if (is.null(weights_column)) paste("variance:", variance) else paste("weighted by", weights_column)
cat(sprintf("Estimated original frequencies of %s (unbiased moment estimator; %s)\n",
            paste(axes, collapse = " x "), how))
cat(sprintf("n = %.10g (%d rows with a missing value left out)\n\n", n, as.integer(dropped)))
print(result, row.names = FALSE)

out <- commandArgs(trailingOnly = TRUE)
if (length(out) > 0) {
  quoted <- function(x) paste0("\"", gsub("\"", "\"\"", enc2utf8(x), fixed = TRUE), "\"")
  fields <- lapply(result, function(col) if (is.numeric(col)) sprintf("%.17g", col) else quoted(col))
  lines <- c(paste(quoted(names(result)), collapse = ","), do.call(paste, c(fields, sep = ",")))
  con <- file(out[1], open = "wb")
  writeLines(lines, con, useBytes = TRUE)
  close(con)
}
