!> matrix_market: read a dense real matrix from a Matrix Market file (the formats the
!> two-mass structure uses: `array real symmetric`, plus `array real general` and
!> `coordinate real general|symmetric`).
module matrix_market
  use dense, only: dp
  implicit none
  private
  public :: read_matrix_market

contains

  !> a (n x m) from `path`; ok .false. with a sentence in `message` on failure.
  subroutine read_matrix_market(path, a, ok, message)
    character(len=*), intent(in) :: path
    real(dp), allocatable, intent(out) :: a(:, :)
    logical, intent(out) :: ok
    character(len=:), allocatable, intent(out) :: message
    character(len=1024) :: line, what
    character(len=32) :: object, layout, field, symmetry
    integer :: unit, ios, n, m, nnz, i, j, e
    real(dp) :: value
    logical :: symmetric
    ok = .false.
    message = ""
    open (newunit=unit, file=path, status="old", action="read", iostat=ios, iomsg=what)
    if (ios /= 0) then
      message = path // ": " // trim(what)
      return
    end if
    read (unit, "(a)", iostat=ios) line
    if (ios == 0) read (line, *, iostat=ios) what, object, layout, field, symmetry
    if (ios /= 0 .or. lower(what) /= "%%matrixmarket" .or. lower(object) /= "matrix") then
      message = path // ": not a Matrix Market matrix file"
      close (unit)
      return
    end if
    layout = lower(layout); field = lower(field); symmetry = lower(symmetry)
    symmetric = symmetry == "symmetric"
    if (field /= "real" .or. .not. (symmetric .or. symmetry == "general") .or. &
        .not. (layout == "array" .or. layout == "coordinate")) then
      message = path // ": only real general or symmetric matrices are read, not " // &
                trim(layout) // " " // trim(field) // " " // trim(symmetry)
      close (unit)
      return
    end if
    do  ! comments, then the size line
      read (unit, "(a)", iostat=ios) line
      if (ios /= 0) exit
      if (len_trim(line) > 0 .and. line(1:1) /= "%") exit
    end do
    nnz = 0
    if (ios == 0) then
      if (layout == "array") then
        read (line, *, iostat=ios) n, m
      else
        read (line, *, iostat=ios) n, m, nnz
      end if
    end if
    if (ios /= 0 .or. (symmetric .and. n /= m)) then
      message = path // ": bad size line"
      close (unit)
      return
    end if
    allocate (a(n, m))
    a = 0.0_dp
    if (layout == "array") then  ! column-major; symmetric: the lower triangle only
      do j = 1, m
        do i = merge(j, 1, symmetric), n
          read (unit, *, iostat=ios) a(i, j)
          if (ios /= 0) exit
          if (symmetric) a(j, i) = a(i, j)
        end do
        if (ios /= 0) exit
      end do
    else
      do e = 1, nnz
        read (unit, *, iostat=ios) i, j, value
        if (ios /= 0) exit
        if (i < 1 .or. i > n .or. j < 1 .or. j > m) then
          ios = 1
          exit
        end if
        a(i, j) = value
        if (symmetric) a(j, i) = value
      end do
    end if
    close (unit)
    if (ios /= 0) then
      message = path // ": truncated or bad entries"
      return
    end if
    ok = .true.
  end subroutine read_matrix_market

  pure function lower(s) result(out)
    character(len=*), intent(in) :: s
    character(len=len(s)) :: out
    integer :: i
    out = s
    do i = 1, len(s)
      if (s(i:i) >= "A" .and. s(i:i) <= "Z") out(i:i) = achar(iachar(s(i:i)) + 32)
    end do
  end function lower

end module matrix_market
