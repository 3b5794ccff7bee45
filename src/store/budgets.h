/*-------------------------------------------------------------------------
 * store/budgets.h
 *	  Budget admission for claims.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_BUDGETS_H
#define SCHEDQ_BUDGETS_H

#include "postgres.h"

extern bool schedq_budgets_any(bool cluster);
extern bool schedq_budgets_admit(Datum budgets, Datum cost, bool cluster);

#endif /* SCHEDQ_BUDGETS_H */
