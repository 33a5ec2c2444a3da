/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep.h -- everything pmrep offers: include this one header.
 */
#ifndef PMREP_H
#define PMREP_H

#include <pmrep/base.h>
#include <pmrep/transport.h>
#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#endif /* PMREP_H */
